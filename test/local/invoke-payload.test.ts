import { describe, expect, it } from 'vitest';
import { eventOf, exceedsPayloadBytes, toInvokePayload } from '#lib/twin/lambda/invoke-payload.ts';

const BODIES = [
  '',
  '{"type":"text","messages":[{"text":"a \\"quoted\\" word"}]}',
  'línea\nnueva\t"ё" 😀',
  '\u0000\u001f\u007f',
  'lone \ud800 surrogate \udfff',
];
const proxyEvent = (body: unknown) => ({
  resource: '/x',
  httpMethod: 'POST',
  headers: { a: 'b' },
  body,
  isBase64Encoded: false,
  requestContext: { authorizer: undefined, requestId: 'r' },
});

/** What Lambda would hand the function: the event through JSON. */
const throughJson = (event: unknown) => JSON.parse(JSON.stringify(event ?? null)) as unknown;

describe('an event on its way to a function worker', () => {
  it('reaches the handler as the same value, keys in the same order, as through JSON', () => {
    class Custom {
      body = 'kept inside the JSON';
    }
    const events = [
      ...BODIES.map(proxyEvent),
      proxyEvent(null),
      proxyEvent(undefined),
      { body: 5 },
      new Custom(),
      [1, 'two'],
      'text',
      7,
      null,
      undefined,
      {},
    ];
    for (const event of events) {
      // A message between threads is a structured clone.
      const received = eventOf(structuredClone(toInvokePayload(event)));
      expect(received).toEqual(throughJson(event));
      expect(JSON.stringify(received)).toBe(JSON.stringify(throughJson(event)));
    }
  });

  it('carries a request body as its bytes, which the worker decodes into the event API Gateway would send', () => {
    const bytes = [
      ...BODIES.map((body) => Buffer.from(body, 'utf8')),
      Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
      Buffer.from('é😀').subarray(0, 3),
    ];
    for (const body of bytes) {
      const invocation = toInvokePayload(proxyEvent(null), body);
      expect(invocation.payload).toContain('"body":null');
      // Bytes that are not UTF-8 become U+FFFD, as API Gateway passes a text body.
      const expected = throughJson(proxyEvent(body.toString('utf8')));
      const received = eventOf(structuredClone(invocation));
      expect(received).toEqual(expected);
      expect(JSON.stringify(received)).toBe(JSON.stringify(expected));
    }
  });

  it('carries a body API Gateway hands over as base64 (a binary media type matched) as its bytes, exactly', () => {
    const bytes = [
      Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
      Buffer.from('é😀').subarray(0, 3),
      Buffer.alloc(1000, 1),
      Buffer.from('{"a":"ё"}'),
      Buffer.from([0]),
    ];
    for (const body of bytes) {
      const event = { ...proxyEvent(null), isBase64Encoded: true };
      const received = eventOf(structuredClone(toInvokePayload(event, body))) as { body: string; isBase64Encoded: boolean };
      expect(received).toEqual(throughJson({ ...event, body: body.toString('base64') }));
      expect(Buffer.from(received.body, 'base64').equals(body)).toBe(true);
    }
  });

  it("never carries a pooled buffer's other bytes to the function's thread", () => {
    // Small Buffers share Node's pool: the request body is a slice of memory holding other bytes.
    const secret = Buffer.from('twin-only secret bytes');
    const body = Buffer.concat([Buffer.from('{"a":1}')]);
    expect(body.buffer.byteLength).toBeGreaterThan(body.byteLength);
    const received = structuredClone(toInvokePayload(proxyEvent(null), body));
    expect(received.body!.buffer.byteLength).toBe(body.byteLength);
    expect(Buffer.from(received.body!.buffer).includes(secret)).toBe(false);
    expect((eventOf(received) as { body: string }).body).toBe('{"a":1}');
  });

  it('measures the whole event as JSON against the payload limit, to the byte', () => {
    const bodies = [...BODIES, '"'.repeat(5000), '\u0001'.repeat(3000), 'я'.repeat(4000), '\ud83d'.repeat(1000), 'x'.repeat(10_000)];
    for (const body of bodies) {
      for (const event of [proxyEvent(body), { body }]) {
        const bytes = Buffer.byteLength(JSON.stringify(event));
        const invocation = toInvokePayload(event);
        for (const limit of [bytes - 1, bytes, bytes + 1, bytes * 7]) expect(exceedsPayloadBytes(invocation, limit)).toBe(bytes > limit);
      }
      // The same event with its body still in bytes is measured as the event it becomes.
      const decoded = Buffer.from(body, 'utf8');
      const bytes = Buffer.byteLength(JSON.stringify(proxyEvent(decoded.toString('utf8'))));
      const invocation = toInvokePayload(proxyEvent(null), decoded);
      for (const limit of [bytes - 1, bytes, bytes + 1, bytes * 7]) expect(exceedsPayloadBytes(invocation, limit)).toBe(bytes > limit);
      // And as base64, whatever its bytes (control bytes would take 6 each as text).
      const binaryEvent = { ...proxyEvent(null), isBase64Encoded: true };
      const base64Bytes = Buffer.byteLength(JSON.stringify({ ...binaryEvent, body: decoded.toString('base64') }));
      const binary = toInvokePayload(binaryEvent, decoded);
      for (const limit of [base64Bytes - 1, base64Bytes, base64Bytes + 1])
        expect(exceedsPayloadBytes(binary, limit)).toBe(base64Bytes > limit);
    }
  });
});
