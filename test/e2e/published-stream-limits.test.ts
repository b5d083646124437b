import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, publishFixtures, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { openSse } from '../support/sse.ts';

/**
 * Streams against the platform's limits, with the limits scaled down: the twin ends a streamed response after
 * 4 s without a byte (API Gateway: 5 minutes), the SSE routes send their comment heartbeat every 200 ms
 * (on AWS: 15 s) and end themselves after 9 s (on AWS: 14 minutes, before the 15-minute integration timeout).
 * A heartbeat twenty times as often as the idle limit keeps the stream open on a loaded machine too.
 */
const IDLE_TIMEOUT_MS = 4_000;
const STREAM_MAX_MS = 9_000;
const TEST_TIMEOUT_MS = 120_000;

let twin: TestTwin;
let key: string;
let client: ReturnType<typeof publishedClient>;
beforeAll(async () => {
  process.env.STREAM_HEARTBEAT_MS = '200';
  process.env.STREAM_MAX_MS = String(STREAM_MAX_MS);
  twin = await startTestTwin({ streamIdleTimeoutMs: IDLE_TIMEOUT_MS });
  await publishFixtures(twin);
  key = (await createKey(twin, 'full')).key;
  client = publishedClient(twin, key);
});
afterAll(() => twin?.close());

const stage = () => `${twin.url}/prod/api/v1/published`;
const auth = () => ({ authorization: `Bearer ${key}` });

/** An execution waiting at its approval: nothing happens in its log until someone answers. */
async function waitingRun(): Promise<{ executionId: string; lastId: number }> {
  const stream = await openSse(`${stage()}/workflows/support-bot/stream`, {
    method: 'POST',
    headers: auth(),
    body: { user_id: 'u', input: { message: 'hold' } },
  });
  await stream.ended;
  const complete = stream.events.at(-1)!;
  expect(complete.data.status).toBe('interrupted');
  return { executionId: complete.data.execution_id, lastId: complete.id! };
}

describe('SSE streams at the platform limits', () => {
  it(
    'keeps a silent subscription alive with comment heartbeats past the idle limit, then ends itself with a resume notice',
    async () => {
      const { executionId, lastId } = await waitingRun();
      const subscription = await openSse(`${stage()}/executions/${executionId}/events`, { headers: auth() });
      await subscription.ended;

      // Silent for the whole stream but for the first state: only heartbeats kept it open three times the idle limit.
      expect(subscription.status).toBe(200);
      expect(subscription.events.map((event) => event.event)).toEqual(['status', 'resume']);
      expect(subscription.comments.filter((comment) => comment.trim() === 'keep-alive').length).toBeGreaterThanOrEqual(
        STREAM_MAX_MS / IDLE_TIMEOUT_MS,
      );
      const resume = subscription.events[1]!;
      expect(resume.id).toBeUndefined();
      expect(resume.data).toEqual({
        last_event_id: lastId,
        resume_url: `${stage()}/executions/${executionId}/events?after=${lastId}`,
        reason: 'time_limit',
      });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'resumes at the URL the notice names and follows the execution to its end',
    async () => {
      const { executionId, lastId } = await waitingRun();
      const first = await openSse(`${stage()}/executions/${executionId}/stream?after=${lastId}`, { headers: auth() });
      await first.ended;
      const notice = first.events.at(-1)!;
      expect(first.events).toHaveLength(1);
      expect(notice).toMatchObject({ event: 'resume', data: { last_event_id: lastId, reason: 'time_limit' } });

      const next = await openSse(notice.data.resume_url, { headers: auth() });
      expect((await client.approve(executionId, { feedback: 'fine' })).status).toBe(200);
      await next.ended;
      expect(next.events.map((event) => event.id)).toEqual(next.events.map((_, index) => lastId + 1 + index));
      expect(next.events.at(-1)!.data).toMatchObject({ status: 'completed', output: 'You said: hold' });
    },
    TEST_TIMEOUT_MS,
  );
});
