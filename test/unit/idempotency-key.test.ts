import { describe, expect, it } from 'vitest';
import { executeRequestSchema, type ExecuteRequest } from '#executions/execute-request.ts';
import { canonicalJson, requestFingerprint } from '#executions/request-fingerprint.ts';
import { idempotencyKey, parseIdempotencyKey } from '#published/execution-start.ts';
import { ValidationError } from '#shared/errors.ts';
import type { HttpRequest } from '#shared/http/http-stack.ts';

const refusal = (value: string) => {
  try {
    parseIdempotencyKey(value);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('the Idempotency-Key header', () => {
  it('takes 1 to 255 printable ASCII characters exactly as sent', () => {
    for (const key of ['a', '8e03978e-40d5-43e8-bc93-6894a57f9324', '"quoted"', 'with space ~!@#$%^&*()', 'k'.repeat(255)]) {
      expect(parseIdempotencyKey(key)).toBe(key);
    }
  });

  it('is optional: without the header there is no key', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
    expect(idempotencyKey({ headers: { 'Content-Type': 'application/json' } } as unknown as HttpRequest)).toBeUndefined();
  });

  it('is found whatever case the client wrote its name in', () => {
    expect(idempotencyKey({ headers: { 'IDEMPOTENCY-KEY': 'abc' } } as unknown as HttpRequest)).toBe('abc');
  });

  it('refuses an empty key, a 256-character key, non-ASCII and control characters with 400 naming the header', () => {
    for (const key of ['', 'k'.repeat(256), 'clé', 'ключ', 'tab\there', 'del\u007f', 'nul\u0000']) {
      const error = refusal(key);
      expect(error, JSON.stringify(key)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).statusCode).toBe(400);
      expect((error as ValidationError).details).toEqual([
        { field: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' },
      ]);
    }
  });
});

describe('the request fingerprint', () => {
  const parsed = (body: unknown): ExecuteRequest => executeRequestSchema.parse(body);
  const base = { user_id: 'u1', input: { message: 'hi', extra: { a: 1, b: [1, 2] } } };

  it('is the same for every spelling of the same body: key order, whitespace, defaults, unknown fields', () => {
    const fingerprint = requestFingerprint('echo', parsed(base));
    const reordered = JSON.parse(
      '{ "input": { "extra": { "b": [1, 2.0], "a": 1 }, "message": "hi" },\n  "user_id": "u1", "overrides": {} }',
    );
    expect(requestFingerprint('echo', parsed(reordered))).toBe(fingerprint);
    expect(requestFingerprint('echo', parsed({ ...base, something_else: true }))).toBe(fingerprint);
  });

  it('differs for another workflow or any value the execution would see', () => {
    const fingerprint = requestFingerprint('echo', parsed(base));
    const others = [
      requestFingerprint('router', parsed(base)),
      requestFingerprint('echo', parsed({ ...base, user_id: 'u2' })),
      requestFingerprint('echo', parsed({ ...base, thread_id: 't' })),
      requestFingerprint('echo', parsed({ ...base, input: { ...base.input, message: 'hi!' } })),
      requestFingerprint('echo', parsed({ ...base, input: { ...base.input, extra: { a: 1, b: [2, 1] } } })),
      requestFingerprint('echo', parsed({ ...base, overrides: { answer: { reply: 'x' } } })),
      requestFingerprint('echo', parsed({ ...base, callback_url: 'https://a.example/hook', webhook_secret: 's' })),
    ];
    expect(new Set([fingerprint, ...others]).size).toBe(others.length + 1);
  });

  it('counts a __proto__ key the caller sent as data', () => {
    const withProto = parsed(JSON.parse('{"user_id":"u1","input":{"__proto__":{"x":1}}}'));
    const without = parsed(JSON.parse('{"user_id":"u1","input":{}}'));
    expect(requestFingerprint('echo', withProto)).not.toBe(requestFingerprint('echo', without));
    expect(canonicalJson(withProto.input)).toBe('{"__proto__":{"x":1}}');
  });

  it('writes canonical JSON: sorted keys at every depth, arrays in order, undefined left out', () => {
    expect(canonicalJson({ b: 1, a: [{ d: null, c: 'x' }, undefined], e: undefined })).toBe('{"a":[{"c":"x","d":null},null],"b":1}');
  });
});
