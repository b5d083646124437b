import { describe, expect, it } from 'vitest';
import { startExecution, waitUntilSettled, type StartDeps } from '#executions/execution-service.ts';
import { createSettleTimes } from '#executions/settle-polling.ts';
import type { ExecuteRequest } from '#executions/execute-request.ts';
import { ServiceUnavailableError, ValidationError } from '#shared/errors.ts';
import { awsError } from '../support/fakes/faults.ts';
import { PROJECT, executionEnvironment } from '../support/fakes/execution-environment.ts';

const caller = { projectId: PROJECT };
const CALLBACK_URL = 'https://hooks.example.com/executions';

function setup(options: { timed?: boolean } = {}) {
  const env = executionEnvironment();
  const deps: StartDeps = { ...env.start, ...(options.timed ? { settleTimes: createSettleTimes() } : {}) };
  return { ...env, deps };
}

const request = (extra: Partial<ExecuteRequest> = {}): ExecuteRequest => ({
  input: { message: 'hi' },
  user_id: 'user-1',
  overrides: {},
  ...extra,
});

describe('startExecution', () => {
  it('stores the execution context, a queued record and the user turn, then starts the state machine with ids and a cursor only', async () => {
    const env = setup();
    const record = await startExecution(env.deps, caller, 'echo', request({ callback_url: CALLBACK_URL, webhook_secret: 'whsec_x' }));

    // The user's message is the execution's first history turn, written before the state machine starts (the cursor counts it).
    const thread = env.userState.turns.get(JSON.stringify([caller.projectId, record.user_id, record.thread_id]));
    expect(thread?.map(({ turn, sequence }) => ({ ...turn, sequence }))).toEqual([
      { role: 'user', text: 'hi', execution_id: record.execution_id, at: record.created_at, sequence: 1 },
    ]);
    expect(env.executions.stored(record.execution_id)).toMatchObject({
      status: 'queued',
      callback_state: 'pending',
      webhook_secret: 'whsec_x',
    });
    expect(env.contexts.contexts.get(record.execution_id)?.context.input).toEqual({ message: 'hi' });
    expect(env.stateMachine.executions.get(record.execution_id)?.input).toEqual({
      mode: 'run',
      execution_id: record.execution_id,
      cursor: { node: 'answer', steps: 0, turns: 1, outputs: 0, approval_node: null },
    });
  });

  it('answers 503 when the state machine cannot be started, and leaves the record failed without a callback', async () => {
    const env = setup();
    env.stateMachine.faults.failNext('start', awsError('ServiceUnavailable'));
    const failedAt = env.clock.now();

    const started = startExecution(env.deps, caller, 'echo', request({ callback_url: CALLBACK_URL, initial_memory: { plan: 'gold' } }));
    const error = await started.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect((error as ServiceUnavailableError).statusCode).toBe(503);

    // The record was written before the start: it stays, failed, and asks for no callback (the caller got the 503 instead).
    const [record] = env.executions.all();
    expect(env.executions.items.size).toBe(1);
    expect(record).toMatchObject({
      status: 'failed',
      error: 'The execution service was unavailable',
      finished_at: new Date(failedAt).toISOString(),
      callback_url: CALLBACK_URL,
      callback_state: 'none',
    });
    // No run and no callback execution exist; the execution context and the initial memory written before stay.
    expect(env.stateMachine.startedNames()).toEqual([]);
    expect([...env.contexts.contexts.keys()]).toEqual([record!.execution_id]);
    expect(env.userState.memoryOf(PROJECT, 'user-1')).toEqual({ plan: 'gold' });
    // The message leaves its thread again: a retry of the 503 sends it anew, and it must not be there twice.
    expect(env.userState.threadOf(PROJECT, 'user-1', record!.thread_id)).toEqual([]);
  });

  for (const [cleanUp, fail, statuses] of [
    [
      'the execution cannot be marked failed (the record stays queued)',
      (env: ReturnType<typeof setup>) => env.executions.faults.failNext('transition', awsError('ProvisionedThroughputExceededException')),
      ['queued'],
    ],
    [
      'the user turn cannot be taken back',
      (env: ReturnType<typeof setup>) => env.userState.faults.failNext('removeTurn', awsError('ProvisionedThroughputExceededException')),
      ['failed'],
    ],
  ] as const) {
    it(`still answers 503 (not 500) when ${cleanUp}`, async () => {
      const env = setup();
      env.stateMachine.faults.failNext('start', awsError('ServiceUnavailable'));
      fail(env);

      const error = await startExecution(env.deps, caller, 'echo', request()).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ServiceUnavailableError);
      expect(env.executions.all().map((record) => record.status)).toEqual(statuses);
      expect(env.stateMachine.startedNames()).toEqual([]);
    });
  }

  it('keeps an execution whose start went through (only its answer was lost) as its first step left it, with its message', async () => {
    const env = setup();
    // StartExecution reaches Step Functions and the execution's first step marks it running before the lost answer is seen.
    env.stateMachine.loseNextAnswer(awsError('TimeoutError'), async () => {
      const [name] = env.stateMachine.startedNames();
      await env.executions.transition(name!, ['queued', 'running'], { status: 'running' });
    });

    const error = await startExecution(env.deps, caller, 'echo', request({ callback_url: CALLBACK_URL })).catch(
      (caught: unknown) => caught,
    );

    expect(error).toBeInstanceOf(ServiceUnavailableError);
    const [record] = env.executions.all();
    // The record tells the truth (the execution goes on, its callback still due), and its message stays in its thread.
    expect(record).toMatchObject({ status: 'running', error: null, callback_state: 'pending' });
    expect(env.stateMachine.startedNames()).toEqual([record!.execution_id]);
    expect(env.userState.threadOf(PROJECT, 'user-1', record!.thread_id)).toHaveLength(1);
  });

  it('marks an execution whose start answer was lost failed when the mark comes before its first step, which then goes no further', async () => {
    const env = setup();
    env.stateMachine.loseNextAnswer(awsError('TimeoutError'));

    const error = await startExecution(env.deps, caller, 'echo', request()).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(ServiceUnavailableError);
    const [record] = env.executions.all();
    expect(record).toMatchObject({ status: 'failed', error: 'The execution service was unavailable', callback_state: 'none' });
    expect(env.userState.threadOf(PROJECT, 'user-1', record!.thread_id)).toEqual([]);
    // The execution exists, but its first step's running mark (queued or running only) finds the execution ended.
    expect(env.stateMachine.startedNames()).toEqual([record!.execution_id]);
    expect(await env.executions.transition(record!.execution_id, ['queued', 'running'], { status: 'running' })).toBeUndefined();
  });

  it('a later start of the same request gets a new execution: the failed one is not reused', async () => {
    const env = setup();
    env.stateMachine.faults.failNext('start', awsError('ThrottlingException'));
    await expect(startExecution(env.deps, caller, 'echo', request())).rejects.toBeInstanceOf(ServiceUnavailableError);
    const retried = await startExecution(env.deps, caller, 'echo', request());

    expect(
      env.executions
        .all()
        .map((record) => record.status)
        .sort(),
    ).toEqual(['failed', 'queued']);
    expect(env.executions.stored(retried.execution_id).status).toBe('queued');
    expect(env.stateMachine.startedNames()).toEqual([retried.execution_id]);
  });

  it('writes the record, the execution context, the log start, the initial memory and the user turn side by side, and starts the execution after all of them', async () => {
    const env = setup();
    const entered: string[] = [];
    const seenWhenDone: number[] = [];
    let allEntered!: () => void;
    const together = new Promise<void>((resolve) => (allEntered = resolve));
    // Each write waits (at most 200 ms) until all five have begun: written one after another, the first sees only itself.
    const hold = (name: string) => async () => {
      entered.push(name);
      if (entered.length === 5) allEntered();
      await Promise.race([together, new Promise((resolve) => setTimeout(resolve, 200))]);
      seenWhenDone.push(entered.length);
    };
    env.executions.faults.beforeNext('create', hold('record'));
    env.contexts.faults.beforeNext('createContext', hold('context'));
    env.events.faults.beforeNext('putBatch', hold('log'));
    env.userState.faults.beforeNext('writeMemory', hold('memory'));
    env.userState.faults.beforeNext('appendTurn', hold('user turn'));
    env.stateMachine.faults.beforeNext('start', () => void entered.push('start'));

    const record = await startExecution(env.deps, caller, 'echo', request({ initial_memory: { plan: 'gold' } }));
    expect(seenWhenDone).toEqual([5, 5, 5, 5, 5]);
    expect(entered.at(-1)).toBe('start');
    expect(env.stateMachine.startedNames()).toEqual([record.execution_id]);
    expect(env.events.logs.get(record.execution_id)?.[0]).toMatchObject({ firstId: 1, projectId: PROJECT, final: false });
  });

  for (const [write, fail] of [
    [
      'the execution context',
      (env: ReturnType<typeof setup>) => env.contexts.faults.failNext('createContext', awsError('ProvisionedThroughputExceededException')),
    ],
    ['the log start', (env: ReturnType<typeof setup>) => env.events.faults.failNext('putBatch', awsError('InternalServerError'))],
    [
      'the initial memory',
      (env: ReturnType<typeof setup>) => env.userState.faults.failNext('writeMemory', awsError('ThrottlingException')),
    ],
    ['the user turn', (env: ReturnType<typeof setup>) => env.userState.faults.failNext('appendTurn', awsError('ThrottlingException'))],
    [
      'the initial memory, whose items cannot even be built (a throw before any promise)',
      (env: ReturnType<typeof setup>) => {
        env.userState.writeMemory = () => {
          throw new RangeError('Maximum call stack size exceeded');
        };
      },
    ],
  ] as const) {
    it(`answers 503 and leaves the record failed, without starting the execution, when ${write} cannot be written`, async () => {
      const env = setup();
      fail(env);
      const error = await startExecution(
        env.deps,
        caller,
        'echo',
        request({ callback_url: CALLBACK_URL, initial_memory: { plan: 'gold' } }),
      ).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ServiceUnavailableError);
      expect((error as ServiceUnavailableError).message).toBe('The execution service is unavailable; retry later');
      expect(env.executions.all()).toEqual([
        expect.objectContaining({
          status: 'failed',
          error: 'The execution service was unavailable',
          callback_state: 'none',
          finished_at: env.clock.iso(),
        }),
      ]);
      expect(env.stateMachine.faults.count('start')).toBe(0);
      const [record] = env.executions.all();
      expect(env.userState.threadOf(PROJECT, 'user-1', record!.thread_id)).toEqual([]);
    });
  }

  it('answers 503 when the record itself cannot be written: there is nothing to mark and the execution is not started', async () => {
    const env = setup();
    env.executions.faults.failNext('create', awsError('ServiceUnavailable'));
    const error = await startExecution(env.deps, caller, 'echo', request()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(env.executions.items.size).toBe(0);
    expect(env.executions.faults.count('transition')).toBe(0);
    expect(env.stateMachine.faults.count('start')).toBe(0);
  });

  it('refuses an unsafe callback_url before writing anything', async () => {
    const env = setup();
    const error = await startExecution(
      env.deps,
      caller,
      'echo',
      request({ callback_url: 'http://10.0.0.1/hook', initial_memory: { a: 1 } }),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.map((issue) => issue.field)).toEqual(['callback_url']);
    expect(env.executions.items.size).toBe(0);
    expect(env.contexts.contexts.size).toBe(0);
    expect(env.userState.memory.size).toBe(0);
    expect(env.stateMachine.faults.count('start')).toBe(0);
  });
});

describe('waitUntilSettled', () => {
  /** The execution settles (as its step would write it) once the clock reaches `atMs`; answers how many status reads it took. */
  function settlesAt(env: ReturnType<typeof setup>, executionId: string, atMs: number, status: 'completed' | 'interrupted' = 'completed') {
    let reads = 0;
    const get = env.executions.get.bind(env.executions);
    env.executions.get = async (id, consistent) => {
      if (id === executionId) {
        reads += 1;
        const changes = status === 'completed' ? { status, output: 'ok', finished_at: new Date(atMs).toISOString() } : { status };
        if (env.clock.now() >= atMs) await env.executions.transition(executionId, ['queued', 'running'], changes);
      }
      return get(id, consistent);
    };
    return () => reads;
  }

  /** Starts a run of echo that settles `afterMs` after the start, waits for it; answers the record, the reads and the pauses. */
  async function runFor(env: ReturnType<typeof setup>, afterMs: number, status: 'completed' | 'interrupted' = 'completed') {
    const started = await startExecution(env.deps, caller, 'echo', request());
    const reads = settlesAt(env, started.execution_id, env.clock.now() + afterMs, status);
    const sleepsBefore = env.clock.sleeps.length;
    const record = await waitUntilSettled(env.deps, started, env.clock.now() + 14 * 60_000);
    return { record, reads: reads(), pauses: env.clock.sleeps.slice(sleepsBefore) };
  }

  it('without timings of recent runs, reads after 10 ms and then pauses growing by half', async () => {
    const env = setup();
    const { record, reads, pauses } = await runFor(env, 40);
    expect(record.status).toBe('completed');
    expect(pauses).toEqual([10, 15, 23]);
    expect(reads).toBe(3);
  });

  it('after three runs of the workflow, reads first when they settled: an execution like them is answered in one read', async () => {
    const env = setup({ timed: true });
    for (let i = 0; i < 3; i++) expect((await runFor(env, 30)).reads).toBe(3);
    const timed = await runFor(env, 30);
    expect(timed.pauses).toEqual([30]);
    expect(timed.reads).toBe(1);
    // A little slower: the pauses after the timed read are short.
    const slower = await runFor(env, 36);
    expect(slower.pauses).toEqual([30, 4, 6]);
    expect(slower.reads).toBe(3);
  });

  it('times the first read from when the settled record could be read: finished_at plus about a round trip', async () => {
    const env = setup({ timed: true });
    // Every read takes 2 ms: the step's write of finished_at takes about as long to land.
    const get = env.executions.get.bind(env.executions);
    env.executions.get = async (id, consistent) => {
      env.clock.advance(2);
      return get(id, consistent);
    };
    for (let i = 0; i < 3; i++) await runFor(env, 30);
    const timed = await runFor(env, 30);
    expect(timed.pauses).toEqual([32]);
    expect(timed.reads).toBe(1);
  });

  it('still costs about a read a second for an execution far longer than the recent ones', async () => {
    const env = setup({ timed: true });
    for (let i = 0; i < 3; i++) await runFor(env, 30);
    const long = await runFor(env, 5 * 60_000);
    expect(long.record.status).toBe('completed');
    expect(long.reads).toBeLessThanOrEqual(300 + 15);
    expect(Math.max(...long.pauses)).toBe(1000);
  });

  it('does not time later waits from interrupted runs (they have no finished_at)', async () => {
    const env = setup({ timed: true });
    for (let i = 0; i < 3; i++) expect((await runFor(env, 30, 'interrupted')).record.status).toBe('interrupted');
    expect((await runFor(env, 30)).pauses[0]).toBe(10);
  });

  it('answers the record as it is when the deadline comes first, without sleeping past it', async () => {
    const env = setup();
    const started = await startExecution(env.deps, caller, 'echo', request());
    const deadline = env.clock.now() + 100;
    const record = await waitUntilSettled(env.deps, started, deadline);
    expect(record.status).toBe('queued');
    expect(env.clock.now()).toBeLessThanOrEqual(deadline);
  });
});
