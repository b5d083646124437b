import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { afterEach, describe, expect, it } from 'vitest';
import { clientResponse } from '../support/client-response.ts';
import { LocalLambda } from '#lib/twin/lambda/function-host.ts';
import { HeldResponseStream, LAMBDA_STREAM_HOLD_BYTES } from '#lib/twin/lambda-streaming.ts';
import { FillerPacing } from '#published/event-stream-response.ts';
import { MAX_STREAM_MS, STREAM_FLUSH_BURST, STREAM_FLUSH_PADDING_BYTES, STREAM_FLUSH_REFILL_MS } from '#shared/limits.ts';
import { SSE_FLUSH_PADDING, SSE_HEARTBEAT, sseEvent, ssePadding } from '#published/event-stream-response.ts';

/**
 * Lambda response streaming may hold small writes back until more bytes follow or the response ends; the twin does
 * the same (lambda-streaming.ts), and the product follows what must arrive now with filler (STREAM_FLUSH_PADDING_BYTES).
 */

const client = clientResponse;

/** Writes and waits until the stream has taken the bytes (passed on, or held). */
const write = (stream: Writable, text: string) => new Promise<void>((done, fail) => stream.write(text, (error) => (error ? fail(error) : done())));
const end = (stream: Writable) => new Promise<void>((done) => stream.end(done));

describe("the twin's Lambda response stream holds small writes as Lambda may", () => {
  it('holds a heartbeat-sized write, and the status with it, until the response ends', async () => {
    const { log, chunks, toClient } = client();
    const lambda = new HeldResponseStream(toClient);
    lambda.setPrelude({ statusCode: 200, headers: { 'content-type': 'application/json' } });

    await write(lambda, ' ');
    await write(lambda, SSE_HEARTBEAT);
    expect(log).toEqual([]);

    await end(lambda);
    expect(log.map((entry) => entry.kind)).toEqual(['head', 'chunk', 'end']);
    expect(chunks()).toEqual([` ${SSE_HEARTBEAT}`]);
  });

  it('passes everything held on, in order, with the write that brings it to the threshold', async () => {
    const { chunks, toClient } = client();
    const lambda = new HeldResponseStream(toClient);

    await write(lambda, 'a');
    await write(lambda, 'b'.repeat(LAMBDA_STREAM_HOLD_BYTES - 1));
    expect(chunks()).toEqual([`a${'b'.repeat(LAMBDA_STREAM_HOLD_BYTES - 1)}`]);

    await write(lambda, 'c');
    expect(chunks()).toHaveLength(1);
    await end(lambda);
    expect(chunks().at(-1)).toBe('c');
  });

  it('ends the handler side when the client goes away, and drops what it held', async () => {
    const { hangUp, chunks, toClient } = client();
    const lambda = new HeldResponseStream(toClient);
    const closed = new Promise((resolve) => lambda.once('close', resolve));
    await write(lambda, 'held');

    hangUp();
    await closed;
    expect(lambda.destroyed).toBe(true);
    expect(chunks()).toEqual([]);
  });
});

describe("the product's filler gets what must arrive now past the hold", () => {
  it('is at least what the twin holds', () => {
    expect(STREAM_FLUSH_PADDING_BYTES).toBeGreaterThanOrEqual(LAMBDA_STREAM_HOLD_BYTES);
    expect(Buffer.byteLength(SSE_FLUSH_PADDING)).toBeGreaterThanOrEqual(STREAM_FLUSH_PADDING_BYTES);
  });

  it('sends a heartbeat, and an event, on to the client as soon as the filler follows it', async () => {
    const { log, chunks, toClient } = client();
    const lambda = new HeldResponseStream(toClient);
    const token = sseEvent({ id: 7, event: 'token', data: { node_id: 'answer', content: 'Hi' } });

    await write(lambda, SSE_HEARTBEAT);
    await write(lambda, SSE_FLUSH_PADDING);
    expect(log[0]!.kind).toBe('head');
    expect(chunks()).toEqual([SSE_HEARTBEAT + SSE_FLUSH_PADDING]);

    await write(lambda, token);
    await write(lambda, SSE_FLUSH_PADDING);
    expect(chunks().at(-1)!.startsWith(token)).toBe(true);
    expect(log.some((entry) => entry.kind === 'end')).toBe(false);
  });

  it('is comment lines only: an event stream parser sees no event, and no line is long', () => {
    const events: unknown[] = [];
    const comments: string[] = [];
    const parser = createParser({ onEvent: (event) => events.push(event), onComment: (comment) => comments.push(comment) });
    parser.feed(SSE_HEARTBEAT + SSE_FLUSH_PADDING + sseEvent({ id: 1, event: 'start', data: { ok: true } }) + ssePadding(1500));

    expect(events).toEqual([{ id: '1', event: 'start', data: '{"ok":true}' }]);
    expect(comments.filter((comment) => comment.trim() !== '')).toEqual(['keep-alive']);
    const lines = SSE_FLUSH_PADDING.split('\n');
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(1023);
    expect(Buffer.byteLength(ssePadding(1500))).toBeGreaterThanOrEqual(1500);
  });
});

describe('the filler after events is paced', () => {
  it('goes at once for the first bursts, then once per refill, and at once again after a quiet while', () => {
    const pacing = new FillerPacing(3, 1000, 0);
    for (let i = 0; i < 3; i += 1) {
      expect(pacing.waitMs(0)).toBe(0);
      pacing.spend(0);
    }
    expect(pacing.waitMs(0)).toBe(1000);
    expect(pacing.waitMs(400)).toBe(600);
    expect(pacing.waitMs(1000)).toBe(0);
    pacing.spend(1000);
    expect(pacing.waitMs(1000)).toBe(1000);

    expect(pacing.waitMs(60_000)).toBe(0);
    for (let i = 0; i < 3; i += 1) pacing.spend(60_000);
    expect(pacing.waitMs(60_000)).toBe(1000);
  });

  it("keeps a stream generating for its whole 14 minutes far below Lambda's 200 MB response limit", () => {
    // A burst of events every 100 ms (the step function's write interval while a model generates), all stream long.
    const pacing = new FillerPacing(STREAM_FLUSH_BURST, STREAM_FLUSH_REFILL_MS, 0);
    let fillers = 0;
    let due: number | undefined;
    for (let now = 0; now < MAX_STREAM_MS; now += 100) {
      due ??= now + pacing.waitMs(now);
      if (now >= due) {
        pacing.spend(now);
        fillers += 1;
        due = undefined;
      }
    }
    expect(fillers).toBeLessThanOrEqual(STREAM_FLUSH_BURST + MAX_STREAM_MS / STREAM_FLUSH_REFILL_MS);
    expect(fillers * STREAM_FLUSH_PADDING_BYTES).toBeLessThan(100 * 1024 * 1024);
  });
});

describe("the twin's function runtime hands a streaming handler Lambda's holding stream", () => {
  const hosts: LocalLambda[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((lambda) => lambda.close()));
  });
  const streamWriter = () => {
    const handlerFile = fileURLToPath(new URL('../fixtures/functions/stream-writer.ts', import.meta.url));
    const lambda = new LocalLambda({ functionName: 'stream-writer', handlerFile, environment: {}, timeoutSeconds: 10, streaming: true, memoryMb: 256 });
    hosts.push(lambda);
    return lambda;
  };

  it('passes small writes on only at the end of the response', async () => {
    const { log, chunks, toClient } = client();
    await streamWriter().invokeStreaming({ writes: ['a', 'b', 'c'] }, toClient);
    expect(log.map((entry) => entry.kind)).toEqual(['head', 'chunk', 'end']);
    expect(chunks()).toEqual(['abc']);
  }, 20_000);

  it('passes a small write on with the filler that follows it', async () => {
    const { chunks, toClient } = client();
    const filler = ' '.repeat(STREAM_FLUSH_PADDING_BYTES);
    await streamWriter().invokeStreaming({ writes: ['{"first":1}', filler, '{"second":2}'] }, toClient);
    expect(chunks()).toEqual([`{"first":1}${filler}`, '{"second":2}']);
  }, 20_000);
});
