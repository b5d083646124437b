import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAMBDA_STREAM_HOLD_BYTES } from '#lib/twin/lambda-streaming.ts';
import { startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';
import { openResponse } from '../support/http.ts';
import { openSse, type SseStream } from '../support/sse.ts';

/**
 * A deployment whose stage holds small streamed writes, as Lambda has been reported to, and that pads them as
 * `admin verify` recommends: the twin holds each streaming function's bytes until 100 KiB wait
 * (TWIN_STREAM_HOLD_BYTES, the largest hold reported), and STREAM_FLUSH_PADDING_BYTES is as much. Every execution here
 * waits for ten minutes in a `wait` node, so nothing but the product's own writes (and their filler) can get its first
 * events, heartbeats and status out before the end. Heartbeats come every 300 ms (on AWS: every 25 s).
 * published-stream-hold.test.ts has the default (nothing held, no filler) and holding without padding.
 */
let twin: TestTwin;
let key: string;
beforeAll(async () => {
  process.env.STREAM_HEARTBEAT_MS = '300';
  process.env.EXECUTE_HEARTBEAT_MS = '300';
  process.env.STREAM_FLUSH_PADDING_BYTES = String(LAMBDA_STREAM_HOLD_BYTES);
  try {
    ({ twin, key } = await startPublishedTwin({ streamHoldBytes: LAMBDA_STREAM_HOLD_BYTES }));
  } finally {
    // The functions took their environment at start; later twins in this process start with the default.
    delete process.env.STREAM_FLUSH_PADDING_BYTES;
  }
});
afterAll(() => twin?.close());

const stage = () => `${twin.url}/prod/api/v1/published`;
const auth = () => ({ authorization: `Bearer ${key}` });
const waitingRun = { user_id: 'u', input: { kind: 'slow' }, overrides: { pause: { seconds: 600 } } };

/** Resolves once `check` holds, looking again each time the loop turns; rejects after `timeoutMs`. */
async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Drops the connections, as a client that goes away, and stops the execution: Lambda does not tell a streaming function
 * that its caller left (nor does the twin, by default), so each function ends when the execution does. Waits until they
 * have.
 */
async function hangUp(functionIds: string[], closes: (() => void)[], executionId: string): Promise<void> {
  for (const close of closes) close();
  const stopped = await fetch(`${stage()}/executions/${executionId}/stop`, { method: 'POST', headers: auth() });
  expect(stopped.status).toBe(200);
  await stopped.text();
  for (const functionId of functionIds) {
    await until(() => twin.invocationsInFlight(functionId) === 0, `${functionId} to end with the execution`);
  }
}

const keepAlives = (stream: SseStream) => stream.comments.filter((comment) => comment.trim() === 'keep-alive').length;

describe('streamed answers reach the client while the execution still goes on', () => {
  it('POST /stream: the status, the events so far and each heartbeat arrive while the execution waits', async () => {
    const stream = await openSse(`${stage()}/workflows/router/stream`, { method: 'POST', headers: auth(), body: waitingRun });
    const executionId = stream.headers['x-execution-id'] as string;
    try {
      expect(stream.status).toBe(200);
      const waiting = await stream.waitFor((event) => event.event === 'node_update' && event.data.status === 'waiting');
      expect(waiting.data).toMatchObject({ node_id: 'pause', seconds: 600 });
      expect(stream.events.map((event) => event.event)).toEqual(['start', 'node_update', 'node_update', 'node_update', 'node_update']);

      // A heartbeat after the last event comes through too, each on its own.
      const before = keepAlives(stream);
      await until(() => keepAlives(stream) >= before + 2, 'two more heartbeats');
      expect(stream.events.some((event) => event.event === 'complete')).toBe(false);
    } finally {
      await hangUp(['PublishedStreamWorkflow'], [() => stream.close()], executionId);
    }
  });

  it('GET /executions/{id}/events: the execution state arrives at once, not when the stream ends', async () => {
    const started = await openSse(`${stage()}/workflows/router/stream`, { method: 'POST', headers: auth(), body: waitingRun });
    const { data } = await started.waitFor((event) => event.event === 'start');
    started.close();

    const subscription = await openSse(`${stage()}/executions/${data.execution_id}/events`, { headers: auth() });
    try {
      const status = await subscription.waitFor((event) => event.event === 'status');
      expect(status.data).toMatchObject({ execution_id: data.execution_id, status: 'running' });
      const before = keepAlives(subscription);
      await until(() => keepAlives(subscription) > before, 'a heartbeat');
    } finally {
      await hangUp(['PublishedStreamWorkflow', 'PublishedExecutionEvents'], [() => subscription.close()], data.execution_id as string);
    }
  });

  it('POST /execute: the 200 and each whitespace heartbeat arrive before the document', async () => {
    const response = await openResponse(`${stage()}/workflows/router/execute`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify(waitingRun),
    });
    try {
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('application/json');
      await until(() => response.body().length >= 2 * LAMBDA_STREAM_HOLD_BYTES, 'two heartbeats');
      expect(response.body()).toMatch(/^ +$/);
      expect(response.ended()).toBe(false);
    } finally {
      await hangUp(['PublishedExecute'], [() => response.close()], response.headers['x-execution-id'] as string);
    }
  });
});
