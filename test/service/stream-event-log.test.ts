import { describe, expect, it } from 'vitest';
import { endLogAsRecorded, streamEventAppender, streamEventBuffer } from '#executions/stream-event-log.ts';
import { lifecycleStream, executionStream, type StreamedEvent, type StreamEnd, type TailDeps } from '#executions/execution-streams.ts';
import { settledEvents, type StreamEvent } from '#executions/stream-events.ts';
import { ValidationError } from '#shared/errors.ts';
import { checkResumePoint } from '#executions/execution-streams.ts';
import { ManualClock } from '../support/fakes/clock.ts';
import { awsError } from '../support/fakes/faults.ts';
import { InMemoryStreamEventsRepository } from '../support/fakes/stream-events-repository.ts';

const RUN = 'exec-1';
const token = (content: string): StreamEvent => ({ type: 'token', data: { content, node_id: 'answer' } });
const completed = (output: unknown): StreamEvent[] =>
  settledEvents({ execution_id: RUN, status: 'completed', output, error: null, pending_approval: null });

function setup() {
  const clock = new ManualClock();
  const events = new InMemoryStreamEventsRepository();
  return { clock, events, appender: () => streamEventAppender(events, RUN, { now: clock.now, projectId: 'p' }) };
}

describe('the stream event log: appends', () => {
  it('gives gap-free ids across writers that race for the same place, each event once', async () => {
    const env = setup();
    const step = env.appender();
    const stop = env.appender();
    await step.append([token('a'), token('b')]);
    // The stop writes at the end it reads; the step, which remembers an older end, loses the race and moves on.
    await stop.append([{ type: 'node_update', data: { node_id: 'x', type: 'llm', status: 'started' } }]);
    await step.append([token('c')]);

    expect(env.events.eventsOf(RUN).map((event) => [event.id, event.type])).toEqual([
      [1, 'token'],
      [2, 'token'],
      [3, 'node_update'],
      [4, 'token'],
    ]);
    expect(env.events.faults.count('tail')).toBe(3);
  });

  it('appends nothing after the final complete, whoever tries', async () => {
    const env = setup();
    const step = env.appender();
    await step.append([token('a')]);
    expect(
      await env
        .appender()
        .append(settledEvents({ execution_id: RUN, status: 'cancelled', output: null, error: null, pending_approval: null })),
    ).toBe('appended');
    expect(await step.append([token('late')])).toBe('closed');
    expect(await step.append(completed('x'))).toBe('closed');
    expect(env.events.eventsOf(RUN).map((event) => event.type)).toEqual(['token', 'complete']);
    expect(env.events.eventsOf(RUN).at(-1)!.data).toMatchObject({ status: 'cancelled' });
  });

  it('cuts a batch after a final complete inside it', async () => {
    const env = setup();
    await env.appender().append([token('a'), ...completed('a'), token('never')]);
    expect(env.events.eventsOf(RUN).map((event) => event.type)).toEqual(['token', 'complete']);
  });

  it('ends a log as the record says only once, however often asked', async () => {
    const env = setup();
    const usage = { model_calls: 2, input_tokens: 30, output_tokens: 12, tool_calls: 1, images: 0 };
    const record = { execution_id: RUN, status: 'failed' as const, output: null, error: 'Broken', pending_approval: null, usage };
    await endLogAsRecorded(env.appender(), record);
    await endLogAsRecorded(env.appender(), record);
    await endLogAsRecorded(env.appender(), { ...record, status: 'running' });
    expect(env.events.eventsOf(RUN).map((event) => [event.type, event.data])).toEqual([
      ['error', { message: 'Broken' }],
      ['complete', { output: null, execution_id: RUN, status: 'failed', error: 'Broken', usage }],
    ]);
  });

  it('names the project on the first batch only', async () => {
    const env = setup();
    const appender = env.appender();
    await appender.append([token('a')]);
    await appender.append([token('b')]);
    expect(await env.events.owner(RUN)).toBe('p');
    expect(env.events.logs.get(RUN)!.map((batch) => (batch as { projectId?: string }).projectId)).toEqual(['p', undefined]);
  });
});

describe('the step function buffer', () => {
  it('writes the first event at once, then at most once per interval, with node updates riding along', async () => {
    const env = setup();
    const buffer = streamEventBuffer(env.appender(), { now: () => Date.now(), intervalMs: 60_000 });
    buffer.push({ type: 'node_update', data: { node_id: 'answer', type: 'llm', status: 'started' } });
    expect(env.events.faults.count('putBatch')).toBe(0);
    buffer.push(token('first'));
    for (const word of ['second', 'third', 'fourth']) buffer.push(token(word));
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    // One write so far: the update and the first token; the rest wait for the interval or the end of the step.
    expect(env.events.faults.count('putBatch')).toBe(1);
    expect(env.events.eventsOf(RUN).map((event) => event.type)).toEqual(['node_update', 'token']);

    expect(await buffer.flush()).toBe('appended');
    expect(env.events.faults.count('putBatch')).toBe(2);
    expect(env.events.eventsOf(RUN).map((event) => event.data.content ?? event.type)).toEqual([
      'node_update',
      'first',
      'second',
      'third',
      'fourth',
    ]);
  });

  it('reports a failed background write when the step flushes, so the step fails and is retried', async () => {
    const env = setup();
    env.events.faults.failNext('putBatch', awsError('ProvisionedThroughputExceededException'));
    const buffer = streamEventBuffer(env.appender(), { now: () => Date.now(), intervalMs: 10 });
    buffer.push(token('lost?'));
    await expect(buffer.flush()).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
  });
});

/** Drains a stream generator: its events and how it ended. */
async function drain(stream: AsyncGenerator<StreamedEvent, StreamEnd>) {
  const events: StreamedEvent[] = [];
  for (;;) {
    const next = await stream.next();
    if (next.done) return { events, end: next.value };
    events.push(next.value);
  }
}

describe('reading a log', () => {
  const tailDeps = (env: ReturnType<typeof setup>): TailDeps => ({
    events: env.events,
    now: env.clock.now,
    sleep: async (ms) => env.clock.advance(ms),
  });
  const options = (after = 0) => ({ after, signal: new AbortController().signal, deadlineMs: Number.MAX_SAFE_INTEGER });

  async function finishedRun(env: ReturnType<typeof setup>) {
    const appender = env.appender();
    await appender.append([{ type: 'start', data: { execution_id: RUN, thread_id: 't', workflow_id: 'w' } }]);
    await appender.append([token('a'), token('b')]);
    await appender.append(completed('ab'));
  }

  it('streams from after an id, up to the complete', async () => {
    const env = setup();
    await finishedRun(env);
    const all = await drain(executionStream(tailDeps(env), RUN, options()));
    expect(all.end).toBe('finished');
    expect(all.events.map((event) => event.id)).toEqual([1, 2, 3, 4]);
    const resumed = await drain(executionStream(tailDeps(env), RUN, options(2)));
    expect(resumed.events).toEqual(all.events.slice(2));
  });

  it('ends at the deadline while the execution is quiet, backing off between reads', async () => {
    const env = setup();
    await env.appender().append([{ type: 'start', data: { execution_id: RUN, thread_id: 't', workflow_id: 'w' } }]);
    const result = await drain(executionStream(tailDeps(env), RUN, { ...options(), deadlineMs: env.clock.now() + 10_000 }));
    expect(result).toEqual({ events: [{ id: 1, event: 'start', data: expect.any(Object) }], end: 'deadline' });
    // 10 s of silence at most a few reads a second, not one every 40 ms.
    expect(env.events.faults.count('batchesAfter')).toBeLessThan(60);
  });

  it('stops reading at once when the caller goes away', async () => {
    const env = setup();
    await env.appender().append([{ type: 'start', data: { execution_id: RUN, thread_id: 't', workflow_id: 'w' } }]);
    const gone = new AbortController();
    const stream = executionStream(tailDeps(env), RUN, { after: 0, signal: gone.signal, deadlineMs: Number.MAX_SAFE_INTEGER });
    expect((await stream.next()).value).toMatchObject({ id: 1 });
    gone.abort();
    expect(await stream.next()).toEqual({ done: true, value: 'gone' });
  });

  it('gives a subscription the state first, then only later lifecycle events', async () => {
    const env = setup();
    await finishedRun(env);
    const snapshot = await drain(lifecycleStream(tailDeps(env), RUN, options()));
    expect(snapshot.events).toEqual([
      {
        id: 4,
        event: 'status',
        data: {
          execution_id: RUN,
          workflow_id: 'w',
          thread_id: 't',
          status: 'completed',
          output: 'ab',
          error: null,
          pending_approval: null,
        },
      },
    ]);
    const resumed = await drain(lifecycleStream(tailDeps(env), RUN, options(1)));
    expect(resumed.events).toEqual(snapshot.events);
    expect((await drain(lifecycleStream(tailDeps(env), RUN, options(4)))).events).toEqual([]);
  });

  it('refuses to resume after an id the log never gave out', async () => {
    const env = setup();
    await finishedRun(env);
    await expect(checkResumePoint(env, RUN, 5, 'after')).rejects.toBeInstanceOf(ValidationError);
    await expect(checkResumePoint(env, 'no-log', 1, 'after')).rejects.toBeInstanceOf(ValidationError);
  });

  it('says a resume after the final complete of an ended run has nothing more, and any other resume continues', async () => {
    const env = setup();
    await finishedRun(env);
    expect(await checkResumePoint(env, RUN, 4, 'after')).toBe('ended');
    expect(await checkResumePoint(env, RUN, 3, 'after')).toBe('continues');
    expect(await checkResumePoint(env, RUN, 0, 'after')).toBe('continues');
  });

  it("keeps a resume after an approval's complete open: the execution is paused, not ended", async () => {
    const env = setup();
    const appender = env.appender();
    await appender.append([{ type: 'start', data: { execution_id: RUN, thread_id: 't', workflow_id: 'w' } }]);
    const pendingApproval = { approval_id: 'a1', node_id: 'confirm', message: 'ok?' };
    await appender.append(
      settledEvents({ execution_id: RUN, status: 'interrupted', output: null, error: null, pending_approval: pendingApproval }),
    );
    expect(await checkResumePoint(env, RUN, 2, 'after')).toBe('continues');
  });

  it('says the same of a failed and a cancelled run, whose last event is their complete', async () => {
    for (const status of ['failed', 'cancelled'] as const) {
      const env = setup();
      await env.appender().append([{ type: 'start', data: { execution_id: RUN, thread_id: 't', workflow_id: 'w' } }]);
      await env
        .appender()
        .append(
          settledEvents({ execution_id: RUN, status, output: null, error: status === 'failed' ? 'Broken' : null, pending_approval: null }),
        );
      const lastId = env.events.eventsOf(RUN).at(-1)!.id;
      expect(await checkResumePoint(env, RUN, lastId, 'after'), status).toBe('ended');
      expect(await checkResumePoint(env, RUN, lastId - 1, 'after'), status).toBe('continues');
    }
  });
});
