import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, publishedClient, startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';
import { http } from '../support/http.ts';
import { openSse } from '../support/sse.ts';

/**
 * GET /diagnostics/stream-probe over HTTP, at the AWS-shaped URL. The default twin passes each streamed write on at
 * once (TWIN_STREAM_HOLD_BYTES would hold them, as Lambda is reported to), but a loaded machine may be slow: these
 * tests look at what arrives and in which order, never at when.
 */
let twin: TestTwin;
let key: string;
beforeAll(async () => {
  ({ twin, key } = await startPublishedTwin());
});
afterAll(() => twin?.close());

const probe = (query: string) => `${twin.url}/prod/api/v1/published/diagnostics/stream-probe?${query}`;
const auth = (value = key) => ({ authorization: `Bearer ${value}` });

/** The whole body of a probe: the first write (`:` and spaces, exactly `bytes` bytes), then the end of the comment and `end`. */
const probeBody = (bytes: number, holdMs: number) =>
  `:${' '.repeat(bytes - 1)}\n\nevent: end\ndata: {"bytes":${bytes},"hold_ms":${holdMs}}\n\n`;

describe('GET /diagnostics/stream-probe', () => {
  it.each([1, 65_536])('answers 200 with a first write of exactly %i bytes, then the end event, and nothing else', async (bytes) => {
    const response = await http(probe(`bytes=${bytes}&hold_ms=20`), { headers: auth() });

    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream');
    expect(response.text).toBe(probeBody(bytes, 20));
    expect(Buffer.byteLength(response.text.slice(0, response.text.indexOf('\n')))).toBe(bytes);
  });

  it('is, to an EventSource, one `end` event carrying the probe as asked', async () => {
    const stream = await openSse(probe('bytes=1024&hold_ms=0'), { headers: auth() });
    await stream.ended;

    expect(stream.status).toBe(200);
    expect(stream.events).toEqual([{ id: undefined, event: 'end', data: { bytes: 1024, hold_ms: 0 } }]);
  });

  it("sends the headers the product's event streams send", async () => {
    const run = await publishedClient(twin, key).execute('echo', { user_id: 'u', input: { message: 'hi' } });
    expect(run.status).toBe(200);
    const events = await openSse(`${twin.url}/prod/api/v1/published/executions/${run.body.execution_id}/events`, { headers: auth() });
    await events.ended;
    const probed = await openSse(probe('bytes=1&hold_ms=0'), { headers: auth() });
    await probed.ended;

    const streamHeaders = (headers: Record<string, unknown>) =>
      Object.fromEntries(['content-type', 'cache-control', 'connection', 'x-accel-buffering'].map((name) => [name, headers[name]]));
    expect(events.status).toBe(200);
    expect(streamHeaders(probed.headers)).toEqual(streamHeaders(events.headers));
    expect(streamHeaders(probed.headers)).toEqual({
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
  });

  it('lets a key with the read preset measure', async () => {
    const reader = await createKey(twin, 'read');

    const response = await http(probe('bytes=16&hold_ms=0'), { headers: auth(reader.key) });

    expect(response.status).toBe(200);
    expect(response.text).toBe(probeBody(16, 0));
  });

  it('answers 401 in the published error shape without a key', async () => {
    const response = await http(probe('bytes=1&hold_ms=0'));

    expect(response.status).toBe(401);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.body).toEqual({ detail: 'Missing or malformed Authorization header; expected "Bearer <API key>"' });
  });

  it.each([
    ['bytes=0', 'bytes: must be a whole number from 1 to 262144'],
    ['bytes=262145', 'bytes: must be a whole number from 1 to 262144'],
    ['bytes=abc', 'bytes: must be a whole number from 1 to 262144'],
    ['hold_ms=10001', 'hold_ms: must be a whole number from 0 to 10000'],
  ])('answers 400 naming the parameter for %s, in the published error shape', async (query, issue) => {
    const response = await http(probe(query), { headers: auth() });

    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.body).toEqual({ detail: `Validation error: ${issue}` });
  });
});
