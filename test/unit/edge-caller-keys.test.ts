import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { callbackUrlProblem } from '#executions/callback-url.ts';
import { executeRequestSchema } from '#executions/execute-request.ts';
import { metadataFieldTypes, storedMetadataFields } from '#inbound/stored-event.ts';
import { parseInboundEvent } from '#inbound/event-schema.ts';
import { NotFoundError, ValidationError } from '#shared/errors.ts';
import { publicUrlProblem } from '#shared/network/public-url.ts';
import { pathParameter } from '#published/published-route.ts';
import { applyOverrides } from '#workflows/overrides.ts';
import { parseDefinition } from '#workflows/definition-validation.ts';
import type { HttpRequest } from '#shared/http/http-stack.ts';

/**
 * Caller strings that become object keys or DynamoDB keys. Bodies are JSON text: JSON.parse makes `__proto__`
 * an own key, exactly as the handlers see it (an object literal would set the prototype instead).
 */
const PROTOTYPE_NAMES = ['constructor', 'hasOwnProperty', 'toString', 'valueOf', 'prototype', '__proto__'];
const objectWithKeys = (value: (name: string) => string) =>
  JSON.parse(`{${PROTOTYPE_NAMES.map((name) => `"${name}":${value(name)}`).join(',')}}`) as Record<string, unknown>;

describe('webhook metadata keys', () => {
  const event = (metadata: Record<string, unknown>) => ({
    type: 'call',
    external_id: 'e1',
    occurred_at: new Date().toISOString(),
    metadata,
    audio: { url: 'https://records.example.com/a.mp3', format: 'mp3' },
  });

  it('keeps every first-level key, __proto__ included, and types each one', () => {
    const parsed = parseInboundEvent(event(objectWithKeys((name) => (name === 'toString' ? '1' : name === 'valueOf' ? 'true' : '"x"'))));
    expect(parsed.ok).toBe(true);
    const fields = metadataFieldTypes(parsed.ok ? parsed.event.metadata : undefined);

    expect(new Map(fields)).toEqual(
      new Map([
        ['constructor', 'string'],
        ['hasOwnProperty', 'string'],
        ['toString', 'number'],
        ['valueOf', 'boolean'],
        ['prototype', 'string'],
        ['__proto__', 'string'],
      ]),
    );
  });

  it('stores them in a form DynamoDB marshalling accepts and keeps whole', () => {
    const fields = metadataFieldTypes(objectWithKeys(() => '"x"'));
    const marshalled = marshall({ metadata_fields: fields }, { removeUndefinedValues: true });
    const names = marshalled.metadata_fields!.L!.map((pair) => pair.L![0]!.S);
    expect(names).toEqual(PROTOTYPE_NAMES);
  });

  it('reads the map form of events stored before the pair form', () => {
    expect(storedMetadataFields({ direction: 'string', score: 'number' })).toEqual([
      ['direction', 'string'],
      ['score', 'number'],
    ]);
    expect(storedMetadataFields(undefined)).toEqual([]);
  });
});

describe('overrides naming prototype properties', () => {
  const definition = parseDefinition(
    {
      id: 'echo',
      name: 'Echo',
      start: 'answer',
      nodes: { answer: { type: 'llm', provider: 'scripted', reply: 'hi', next: 'done' }, done: { type: 'end', output: 'x' } },
    },
    'echo.json',
    { allowLoopbackTools: false, now: Date.parse('2026-11-26T00:00:00Z') },
  );

  it.each(PROTOTYPE_NAMES)('names overrides.%s as an unknown node', (name) => {
    const overrides = JSON.parse(`{"${name}":{"reply":"x"}}`);
    const failure = (() => {
      try {
        applyOverrides(definition, overrides);
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(ValidationError);
    expect((failure as ValidationError).details).toEqual([{ field: `overrides.${name}`, message: `workflow echo has no node ${name}` }]);
  });

  it.each(PROTOTYPE_NAMES)('names overrides.answer.%s as an unknown parameter', (name) => {
    const overrides = JSON.parse(`{"answer":{"${name}":"x"}}`);
    expect(() => applyOverrides(definition, overrides)).toThrow(ValidationError);
    try {
      applyOverrides(definition, overrides);
    } catch (error) {
      expect((error as ValidationError).details.map((issue) => issue.field)).toEqual([`overrides.answer.${name}`]);
    }
  });

  it('applies a known parameter and leaves the definition as it was', () => {
    const applied = applyOverrides(definition, { answer: { reply: 'changed' } });
    expect(applied.nodes.answer).toMatchObject({ reply: 'changed' });
    expect(definition.nodes.answer).toMatchObject({ reply: 'hi' });
  });
});

describe('execute body keys', () => {
  it('keeps __proto__ in input, overrides and initial_memory, where zod records would drop it', () => {
    const body = JSON.parse(
      '{"user_id":"u","input":{"__proto__":1,"constructor":2},"overrides":{"__proto__":{"reply":"x"}},"initial_memory":{"__proto__":3,"toString":4}}',
    );
    const parsed = executeRequestSchema.parse(body);
    expect(Object.keys(parsed.input)).toEqual(['__proto__', 'constructor']);
    expect(Object.keys(parsed.overrides)).toEqual(['__proto__']);
    expect(Object.keys(parsed.initial_memory!)).toEqual(['__proto__', 'toString']);
    expect(Object.getPrototypeOf(parsed.input)).toBe(Object.prototype);
  });

  it('bounds initial_memory keys in UTF-8 bytes, naming the key', () => {
    const key = 'ё'.repeat(129);
    const parsed = executeRequestSchema.safeParse({ user_id: 'u', initial_memory: { [key]: 1 } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({
      path: ['initial_memory', key],
      message: 'key is 258 bytes of UTF-8; at most 256 bytes',
    });
    expect(executeRequestSchema.safeParse({ user_id: 'u', initial_memory: { '': 1 } }).success).toBe(false);
  });

  it('refuses overrides whose node entry is not an object', () => {
    const parsed = executeRequestSchema.safeParse({ user_id: 'u', overrides: { answer: [] } });
    expect(parsed.error?.issues[0]?.path).toEqual(['overrides', 'answer']);
  });
});

describe('path ids', () => {
  const request = (name: string, value: string) => ({ pathParameters: { [name]: value } }) as unknown as HttpRequest;

  it('answers 404 without a read for ids no real id can be', () => {
    expect(() => pathParameter(request('workflow_id', 'w'.repeat(1100)), 'workflow_id')).toThrow(new NotFoundError('Workflow not found'));
    expect(() => pathParameter(request('workflow_id', 'a.b'), 'workflow_id')).toThrow(NotFoundError);
    expect(() => pathParameter(request('execution_id', 'e'.repeat(2100)), 'execution_id')).toThrow(
      new NotFoundError('Execution not found'),
    );
    expect(() => pathParameter(request('execution_id', 'я'), 'execution_id')).toThrow(NotFoundError);
  });

  it('passes the ids the service makes', () => {
    expect(pathParameter(request('workflow_id', 'support-bot'), 'workflow_id')).toBe('support-bot');
    const uuid = '0b6f3a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
    expect(pathParameter(request('execution_id', uuid), 'execution_id')).toBe(uuid);
    expect(pathParameter(request('execution_id', 'exe_AbC-_123456789'), 'execution_id')).toBe('exe_AbC-_123456789');
  });
});

describe('URLs with a backslash or control characters', () => {
  it.each([
    'https://evil.com\\@127.0.0.1/x',
    'https://records.example.com\\x.mp3',
    'https://records.example.com/calls\\1.mp3',
    'https://records.example.com/a.mp3?next=\\\\127.0.0.1',
  ])('refuses %s', (url) => {
    expect(publicUrlProblem(url)).toBe('must not contain backslashes');
    expect(callbackUrlProblem(url, false)).toBe('must not contain backslashes');
  });

  it('refuses control characters anywhere', () => {
    expect(publicUrlProblem('https://records.example.com/a\u0000.mp3')).toBe('must not contain control characters');
    expect(publicUrlProblem('https://records.example.com/a\u007f.mp3')).toBe('must not contain control characters');
  });

  it('refuses a backslash before the local loopback allowance applies', () => {
    expect(callbackUrlProblem('http://127.0.0.1\\@evil.com/hook', true)).toBe('must not contain backslashes');
    expect(callbackUrlProblem('http://127.0.0.1:4000/hook', true)).toBeUndefined();
  });
});
