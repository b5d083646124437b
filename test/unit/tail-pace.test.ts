import { describe, expect, it } from 'vitest';
import { executionStream } from '#executions/execution-streams.ts';
import type { StreamEvent } from '#executions/stream-events.ts';
import { nextPollPause } from '#executions/tail-pace.ts';
import { ManualClock } from '../support/fakes/clock.ts';
import { InMemoryStreamEventsRepository } from '../support/fakes/stream-events-repository.ts';

/**
 * How often a stream's tail reads the log: at once after new events, less and less often the longer nothing comes, so an
 * idle stream (an execution waiting at its approval, a long tool call) costs a few reads a minute where a 250 ms poll
 * cost 240. On a manual clock: no test here waits for time.
 */
const EXECUTION = 'e1';
const SILENT_WINDOW_MS = 5 * 60_000;

describe('the pause before a tail reads the log again', () => {
  it('is 40 ms after new events, whatever came before', () => {
    expect(nextPollPause({ previousMs: 30_000, fresh: true, waiting: true, silentForMs: 600_000 })).toBe(40);
  });

  it('grows by half while nothing comes, up to 250 ms while the silence is short', () => {
    expect(nextPollPause({ previousMs: 40, fresh: false, waiting: false, silentForMs: 40 })).toBe(60);
    expect(nextPollPause({ previousMs: 200, fresh: false, waiting: false, silentForMs: 1_000 })).toBe(250);
  });

  it('grows on with the silence, to an eighth of it: at most 5 s while the execution runs, 30 s while it waits', () => {
    expect(nextPollPause({ previousMs: 250, fresh: false, waiting: false, silentForMs: 8_000 })).toBe(375);
    expect(nextPollPause({ previousMs: 4_000, fresh: false, waiting: false, silentForMs: 16_000 })).toBe(2_000);
    expect(nextPollPause({ previousMs: 4_000, fresh: false, waiting: false, silentForMs: 600_000 })).toBe(5_000);
    expect(nextPollPause({ previousMs: 4_000, fresh: false, waiting: true, silentForMs: 10_000 })).toBe(5_000);
    expect(nextPollPause({ previousMs: 20_000, fresh: false, waiting: true, silentForMs: 600_000 })).toBe(30_000);
  });
});

const usage = { model_calls: 0, input_tokens: 0, output_tokens: 0, tool_calls: 0, images: 0 };
const pausedAtApproval = [
  { type: 'start', data: { execution_id: EXECUTION, thread_id: 't', workflow_id: 'gate' } },
  { type: 'node_update', data: { node_id: 'ask', type: 'approval', status: 'waiting', approval_id: 'a1' } },
  {
    type: 'complete',
    data: {
      output: null,
      execution_id: EXECUTION,
      status: 'interrupted',
      usage,
      pending_approval: { approval_id: 'a1', node_id: 'ask', message: '?' },
    },
  },
] as StreamEvent[];
const inAToolCall = [
  { type: 'start', data: { execution_id: EXECUTION, thread_id: 't', workflow_id: 'slow' } },
  { type: 'tool_call', data: { node_id: 'a', tool: 'wait', call_id: 'c1', status: 'started', arguments: {} } },
] as StreamEvent[];

/** The reads a stream resumed after the last event of `log` makes over `windowMs` of silence, and its pauses. */
async function silentWindow(log: StreamEvent[], windowMs = SILENT_WINDOW_MS) {
  const events = new InMemoryStreamEventsRepository();
  await events.putBatch(EXECUTION, 1, log, { final: false, projectId: 'p', expiresAtMs: 0 });
  const clock = new ManualClock();
  let reads = 0;
  const counted = Object.assign(Object.create(events) as InMemoryStreamEventsRepository, {
    batchesAfter: (executionId: string, afterFirstId: number) => {
      reads += 1;
      return events.batchesAfter(executionId, afterFirstId);
    },
  });
  const stream = executionStream({ events: counted, now: clock.now, sleep: (ms) => clock.sleep(ms) }, EXECUTION, {
    after: log.length,
    signal: new AbortController().signal,
    deadlineMs: clock.now() + windowMs,
  });
  const next = await stream.next();
  return { reads, pauses: clock.sleeps, end: next.value };
}

describe('an idle stream over a 5-minute window (an abandoned one reads all of it on AWS)', () => {
  it('reads 40 times at most while the execution waits at its approval, not 1,204 times as a 250 ms poll did', async () => {
    const { reads, end } = await silentWindow(pausedAtApproval);
    expect(end).toBe('deadline');
    expect(reads).toBeLessThanOrEqual(40);
  });

  it('reads 100 times at most while a running execution says nothing', async () => {
    const { reads, end } = await silentWindow(inAToolCall);
    expect(end).toBe('deadline');
    expect(reads).toBeLessThanOrEqual(100);
  });

  it('knows from its first read that a stream resumed after an approval waits: its pauses pass 250 ms at once', async () => {
    const waiting = await silentWindow(pausedAtApproval, 2_000);
    const running = await silentWindow(inAToolCall, 2_000);
    expect(Math.max(...waiting.pauses)).toBeGreaterThan(250);
    expect(Math.max(...running.pauses)).toBe(250);
  });

  it('reads again 40 ms after events arrive, however long it was quiet', async () => {
    const events = new InMemoryStreamEventsRepository();
    await events.putBatch(EXECUTION, 1, inAToolCall, { final: false, projectId: 'p', expiresAtMs: 0 });
    const clock = new ManualClock();
    const quietUntil = clock.now() + 60_000;
    let appendedAfter: number | undefined;
    const sleep = async (ms: number) => {
      await clock.sleep(ms);
      if (appendedAfter === undefined && clock.now() >= quietUntil) {
        appendedAfter = clock.sleeps.length;
        const done = [{ type: 'tool_call', data: { node_id: 'a', tool: 'wait', call_id: 'c1', status: 'succeeded' } }] as StreamEvent[];
        await events.putBatch(EXECUTION, 3, done, { final: false, expiresAtMs: 0 });
      }
    };
    const stream = executionStream({ events, now: clock.now, sleep }, EXECUTION, {
      after: 2,
      signal: new AbortController().signal,
      deadlineMs: clock.now() + 70_000,
    });
    expect((await stream.next()).value).toMatchObject({ id: 3 });
    expect((await stream.next()).value).toBe('deadline');

    // The pause during which the event came was long; the one after the read that found it is 40 ms.
    expect(clock.sleeps[appendedAfter! - 1]).toBeGreaterThan(1_000);
    expect(clock.sleeps[appendedAfter!]).toBe(40);
  });
});
