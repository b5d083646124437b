import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { afterEach, describe, expect, it } from 'vitest';
import { clientResponse } from '../support/client-response.ts';
import { LocalLambda } from '#lib/twin/lambda/function-host.ts';
import { HeldResponseStream, LAMBDA_STREAM_HOLD_BYTES, parseStreamHoldBytes } from '#lib/twin/lambda-streaming.ts';
import { FillerPacing, fillerRefillMs, sseFiller } from '#published/event-stream-response.ts';
import { MAX_STREAM_MS, STREAM_FLUSH_BURST, STREAM_FLUSH_PADDING_MAX_BYTES, STREAM_HEARTBEAT_INTERVAL_MS } from '#shared/limits.ts';
import { SSE_HEARTBEAT, sseEvent, ssePadding } from '#published/event-stream-response.ts';
import { parseStreamFlushPadding } from '#shared/http/stream-padding.ts';

/**
 * Lambda response streaming has been reported to hold small writes back until more bytes follow or the response
 * ends; the twin does the same when told to (lambda-streaming.ts, TWIN_STREAM_HOLD_BYTES), and a deployment that
 * measured such holding follows what must arrive now with filler (STREAM_FLUSH_PADDING_BYTES). By default neither.
 */
const SSE_FLUSH_PADDING = sseFiller(LAMBDA_STREAM_HOLD_BYTES);

const client = clientResponse;

/** Writes and waits until the stream has taken the bytes (passed on, or held). */
const write = (stream: Writable, text: string) =>
  new Promise<void>((done, fail) => stream.write(text, (error) => (error ? fail(error) : done())));
const end = (stream: Writable) => new Promise<void>((done) => stream.end(done));

describe("the twin's Lambda response stream, told to hold, holds small writes as Lambda is reported to", () => {
  it('holds a heartbeat-sized write, and the status with it, until the response ends', async () => {
    const { log, chunks, toClient } = client();
    const lambda = new HeldResponseStream(toClient, LAMBDA_STREAM_HOLD_BYTES);
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
    const lambda = new HeldResponseStream(toClient, LAMBDA_STREAM_HOLD_BYTES);

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
    const lambda = new HeldResponseStream(toClient, LAMBDA_STREAM_HOLD_BYTES);
    const closed = new Promise((resolve) => lambda.once('close', resolve));
    await write(lambda, 'held');

    hangUp();
    await closed;
    expect(lambda.destroyed).toBe(true);
    expect(chunks()).toEqual([]);
  });
});

describe("the product's filler, where a deployment pads, gets what must arrive now past the hold", () => {
  it('is exactly the padding set, and nothing at 0 (the default)', () => {
    expect(Buffer.byteLength(SSE_FLUSH_PADDING)).toBe(LAMBDA_STREAM_HOLD_BYTES);
    expect(Buffer.byteLength(sseFiller(STREAM_FLUSH_PADDING_MAX_BYTES))).toBe(STREAM_FLUSH_PADDING_MAX_BYTES);
    expect(sseFiller(0)).toBe('');
  });

  it('is a setting from 0 to 256 KiB, unset meaning 0; anything else is refused, naming the setting', () => {
    expect(parseStreamFlushPadding(undefined, 'STREAM_FLUSH_PADDING_BYTES')).toBe(0);
    expect(parseStreamFlushPadding('', 'STREAM_FLUSH_PADDING_BYTES')).toBe(0);
    expect(parseStreamFlushPadding(' 16384 ', 'STREAM_FLUSH_PADDING_BYTES')).toBe(16_384);
    expect(parseStreamFlushPadding(262_144, 'CDK context streamFlushPaddingBytes')).toBe(262_144);
    for (const bad of ['-1', '262145', '1e5', 'lots', '0x10', 1.5]) {
      expect(() => parseStreamFlushPadding(bad, 'STREAM_FLUSH_PADDING_BYTES')).toThrow(
        `STREAM_FLUSH_PADDING_BYTES must be a whole number of bytes from 0 to 262144, got ${JSON.stringify(bad)}`,
      );
    }
  });

  it('sends a heartbeat, and an event, on to the client as soon as the filler follows it', async () => {
    const { log, chunks, toClient } = client();
    const lambda = new HeldResponseStream(toClient, LAMBDA_STREAM_HOLD_BYTES);
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
    const lines: string[] = SSE_FLUSH_PADDING.split('\n');
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

  it.each([LAMBDA_STREAM_HOLD_BYTES, STREAM_FLUSH_PADDING_MAX_BYTES])(
    "keeps a stream generating for its whole 14 minutes with %i bytes of padding far below Lambda's 200 MB response limit",
    (padding) => {
      // A burst of events every 100 ms (the step function's write interval while a model generates), all stream long.
      const pacing = new FillerPacing(STREAM_FLUSH_BURST, fillerRefillMs(padding), 0);
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
      const heartbeats = Math.ceil(MAX_STREAM_MS / STREAM_HEARTBEAT_INTERVAL_MS);
      expect((fillers + heartbeats) * padding).toBeLessThan(100 * 1000 * 1000);
    },
  );
});

describe("the twin's function runtime holds a streaming handler's writes only when told to", () => {
  const hosts: LocalLambda[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((lambda) => lambda.close()));
  });
  const streamWriter = (streamHoldBytes?: number) => {
    const handlerFile = fileURLToPath(new URL('../fixtures/functions/stream-writer.ts', import.meta.url));
    const lambda = new LocalLambda({
      functionName: 'stream-writer',
      handlerFile,
      environment: {},
      timeoutSeconds: 10,
      streaming: true,
      memoryMb: 256,
      streamHoldBytes,
    });
    hosts.push(lambda);
    return lambda;
  };

  it('passes each write on at once by default: the first reaches the client on its own, before the end', async () => {
    const { log, chunks, toClient } = client();
    await streamWriter().invokeStreaming({ writes: ['a', 'b', 'c'] }, toClient);
    expect(log[0]!.kind).toBe('head');
    expect(chunks()[0]).toBe('a');
    expect(chunks().join('')).toBe('abc');
    expect(log.at(-1)!.kind).toBe('end');
  }, 20_000);

  it('told to hold, passes small writes on only at the end of the response', async () => {
    const { log, chunks, toClient } = client();
    await streamWriter(LAMBDA_STREAM_HOLD_BYTES).invokeStreaming({ writes: ['a', 'b', 'c'] }, toClient);
    expect(log.map((entry) => entry.kind)).toEqual(['head', 'chunk', 'end']);
    expect(chunks()).toEqual(['abc']);
  }, 20_000);

  it('told to hold, passes a small write on with the filler that follows it', async () => {
    const { chunks, toClient } = client();
    const filler = ' '.repeat(LAMBDA_STREAM_HOLD_BYTES);
    await streamWriter(LAMBDA_STREAM_HOLD_BYTES).invokeStreaming({ writes: ['{"first":1}', filler, '{"second":2}'] }, toClient);
    expect(chunks()).toEqual([`{"first":1}${filler}`, '{"second":2}']);
  }, 20_000);

  it('takes the hold from TWIN_STREAM_HOLD_BYTES: unset is 0, a bad value is refused with the setting named', () => {
    expect(parseStreamHoldBytes(undefined)).toBe(0);
    expect(parseStreamHoldBytes('102400')).toBe(102_400);
    for (const bad of ['-1', '100k', '262145']) {
      expect(() => parseStreamHoldBytes(bad)).toThrow(
        /^TWIN_STREAM_HOLD_BYTES must be a whole number of bytes from 0 to 262144 \(e\.g\. 102400, the largest hold reported\), got "/,
      );
    }
  });
});
