import { describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '#executions/execute-request.ts';
import type { ExecutionRecord } from '#executions/execution-model.ts';
import { startOrJoin, type StartOnceDeps } from '#executions/idempotency-service.ts';
import { requestFingerprint } from '#executions/request-fingerprint.ts';
import { NotFoundError, ServiceUnavailableError, UnprocessableContentError } from '#shared/errors.ts';
import {
  IDEMPOTENCY_KEY_RETENTION_MS,
  IDEMPOTENT_START_LEASE_MARGIN_MS,
  IDEMPOTENT_START_LEASE_MS,
  IDEMPOTENT_START_WAIT_MS,
} from '#shared/limits.ts';
import { ttlSeconds } from '#shared/time.ts';
import { awsError, type Faults } from '../support/fakes/faults.ts';
import { InMemoryIdempotencyRepository } from '../support/fakes/idempotency-repository.ts';
import { ECHO, PROJECT, executionEnvironment } from '../support/fakes/execution-environment.ts';

const KEY = 'order-1234';
/** The streaming route's Lambda timeout: a key's lease has nothing to do with how long its invocation may last. */
const INVOCATION_MS = 15 * 60_000;
const request = (message = 'hi'): ExecuteRequest => ({ input: { message }, user_id: 'user-1', overrides: {} });

function setup() {
  const env = executionEnvironment();
  const idempotency = new InMemoryIdempotencyRepository();
  // Every pause lets everything else pending run first (a macrotask turn), then moves the clock: a request that waits
  // for another sees it make progress, whatever the machine's speed.
  const sleep = async (ms: number) => {
    await new Promise((resolve) => setImmediate(resolve));
    env.clock.advance(ms);
  };
  const deps: StartOnceDeps = { ...env.start, sleep, idempotency };
  // Each request runs in an invocation of its own, which Lambda ends 15 minutes after it began.
  const start = (options: { key?: string; body?: ExecuteRequest; workflowId?: string; project?: string } = {}) =>
    startOrJoin(deps, { projectId: options.project ?? PROJECT }, options.workflowId ?? 'echo', options.body ?? request(), {
      key: 'key' in options ? options.key : KEY,
      invocationDeadlineMs: env.clock.now() + INVOCATION_MS,
    });
  return { ...env, idempotency, deps, start };
}

describe('startOrJoin', () => {
  it('starts an execution for a new key and marks the key started with its execution', async () => {
    const env = setup();
    const run = await env.start();

    expect(run.started?.execution_id).toBe(run.executionId);
    expect(env.stateMachine.startedNames()).toEqual([run.executionId]);
    expect(env.idempotency.held(PROJECT, KEY)).toEqual({
      execution_id: run.executionId,
      request_sha256: requestFingerprint('echo', request()),
      state: 'started',
      thread_id: run.started?.thread_id,
      created_at_ms: env.clock.now(),
      expires_at: ttlSeconds(env.clock.now() + IDEMPOTENCY_KEY_RETENTION_MS),
    });
  });

  it('answers the same request with the same key with that execution, starting nothing', async () => {
    const env = setup();
    const first = await env.start();
    env.clock.advance(IDEMPOTENCY_KEY_RETENTION_MS - 60_000);

    const again = await env.start();

    expect(again).toEqual({ executionId: first.executionId });
    expect(env.stateMachine.startedNames()).toEqual([first.executionId]);
  });

  it('refuses the same key with another body or workflow with 422 naming the header', async () => {
    const env = setup();
    await env.start();

    for (const other of [{ body: request('something else') }, { workflowId: 'other' }]) {
      const error = await env.start(other).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(UnprocessableContentError);
      expect((error as UnprocessableContentError).statusCode).toBe(422);
      expect((error as Error).message).toMatch(/^Idempotency-Key: was used in the last 24 hours for a different request/);
    }
    expect(env.stateMachine.executions.size).toBe(1);
  });

  it('keeps keys apart per project', async () => {
    const env = setup();
    env.publications.seed('project-b', [ECHO]);
    const first = await env.start();
    const other = await env.start({ project: 'project-b' });
    expect(other.started).toBeDefined();
    expect(other.executionId).not.toBe(first.executionId);
  });

  it('starts a new execution with a key whose 24 hours are over, though its item is still stored', async () => {
    const env = setup();
    const first = await env.start();
    env.clock.advance(IDEMPOTENCY_KEY_RETENTION_MS + 1000);

    const later = await env.start({ body: request('a new day') });

    expect(later.started).toBeDefined();
    expect(env.stateMachine.startedNames()).toEqual([first.executionId, later.executionId]);
  });

  it('starts one execution for five first requests at once; the others join it', async () => {
    const env = setup();
    const runs = await Promise.all(Array.from({ length: 5 }, () => env.start()));

    expect(runs.filter((run) => run.started)).toHaveLength(1);
    expect(new Set(runs.map((run) => run.executionId)).size).toBe(1);
    expect(env.stateMachine.executions.size).toBe(1);
    expect(env.executions.items.size).toBe(1);
  });

  it('frees the key when the first request is refused or cannot write its execution, so its retry starts anew', async () => {
    const env = setup();
    const refused = await env.start({ workflowId: 'missing' }).catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(NotFoundError);
    expect(env.idempotency.held(PROJECT, KEY)).toBeUndefined();

    env.contexts.faults.failNext('createContext', awsError('ProvisionedThroughputExceededException'));
    const unavailable = await env.start().catch((caught: unknown) => caught);
    expect(unavailable).toBeInstanceOf(ServiceUnavailableError);
    expect(env.idempotency.held(PROJECT, KEY)).toBeUndefined();
    expect(env.stateMachine.faults.count('start')).toBe(0);

    const retried = await env.start();
    expect(retried.started).toBeDefined();
    expect(env.stateMachine.startedNames()).toEqual([retried.executionId]);
  });

  it.each(['ExecutionLimitExceeded', 'ThrottlingException', 'StateMachineDoesNotExist', 'InvalidExecutionInput'])(
    'frees the key when Step Functions refuses the start with %s (nothing started), so its retry starts a fresh run',
    async (name) => {
      const env = setup();
      env.stateMachine.faults.failNext('start', awsError(name));
      const refused = await env.start().catch((caught: unknown) => caught);
      expect(refused).toBeInstanceOf(ServiceUnavailableError);
      expect(env.idempotency.held(PROJECT, KEY)).toBeUndefined();
      const [first] = env.executions.all();
      expect(first).toMatchObject({ status: 'failed', error: 'The execution service was unavailable' });
      expect(env.userState.threadOf(PROJECT, 'user-1', first!.thread_id)).toEqual([]);

      const retried = await env.start();
      expect(retried.started).toBeDefined();
      expect(retried.executionId).not.toBe(first!.execution_id);
      expect(env.stateMachine.startedNames()).toEqual([retried.executionId]);
    },
  );

  it('finishes starting the execution a key names when its first request died before writing anything, once its lease has passed', async () => {
    const env = setup();
    const reservedAtMs = env.clock.now() - 12_000;
    const leaseUntilMs = reservedAtMs + IDEMPOTENT_START_LEASE_MS;
    env.idempotency.seed(PROJECT, KEY, {
      execution_id: 'never-started',
      request_sha256: requestFingerprint('echo', request()),
      state: 'starting',
      lease_id: 'lease-of-the-first',
      starting_until_ms: leaseUntilMs,
      thread_id: 'thread-of-the-first',
      created_at_ms: reservedAtMs,
      expires_at: ttlSeconds(env.clock.now() + IDEMPOTENCY_KEY_RETENTION_MS),
    });

    const run = await env.start();

    expect(env.clock.now()).toBeGreaterThanOrEqual(leaseUntilMs);
    expect(env.clock.now()).toBeLessThan(leaseUntilMs + 1000);
    expect(run.executionId).toBe('never-started');
    expect(run.started).toMatchObject({
      execution_id: 'never-started',
      thread_id: 'thread-of-the-first',
      created_at: new Date(reservedAtMs).toISOString(),
    });
    expect(env.stateMachine.startedNames()).toEqual(['never-started']);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: 'never-started', state: 'started' });
  });

  it('answers 503 when the key is still held for its start after the wait, and starts nothing', async () => {
    const env = setup();
    const startedAt = env.clock.now();
    // A hold longer than the wait: a lease is never that long, but an item of the previous release held its key until
    // its invocation's deadline.
    env.idempotency.seed(PROJECT, KEY, {
      execution_id: 'slow-start',
      request_sha256: requestFingerprint('echo', request()),
      state: 'starting',
      starting_until_ms: startedAt + 10 * 60_000,
      expires_at: ttlSeconds(startedAt + IDEMPOTENCY_KEY_RETENTION_MS),
    });

    const error = await env.start().catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect((error as Error).message).toBe('The first request with this Idempotency-Key is still starting its execution; retry later');
    expect(env.clock.now() - startedAt).toBeGreaterThanOrEqual(IDEMPOTENT_START_WAIT_MS);
    expect(env.stateMachine.executions.size).toBe(0);
  });

  it('starts an execution for every request without a key', async () => {
    const env = setup();
    const [a, b] = [await env.start({ key: undefined }), await env.start({ key: undefined })];
    expect(a.started && b.started).toBeTruthy();
    expect(env.stateMachine.executions.size).toBe(2);
    expect(env.idempotency.items.size).toBe(0);
  });
});

/**
 * A request that dies on the way (its function times out or crashes) stops wherever it was: here its call at that
 * point never returns, as nothing after it ever runs. Its key is left naming its execution.
 */
function crashAt<Method extends string>(faults: Faults<Method>, method: Method): Promise<void> {
  return new Promise((reached) => {
    faults.beforeNext(method, () => {
      reached();
      return new Promise<void>(() => undefined);
    });
  });
}

/** Where a first request can die between reserving its key and marking it started, and what the fakes call there. */
const CRASH_POINTS = [
  {
    point: 'while writing the execution (its record not yet)',
    at: (env: ReturnType<typeof setup>) => crashAt(env.executions.faults, 'create'),
  },
  {
    point: 'after writing the execution, before saying it is about to start it',
    at: (env: ReturnType<typeof setup>) => crashAt(env.idempotency.faults, 'markLaunching'),
  },
  { point: 'about to send StartExecution', at: (env: ReturnType<typeof setup>) => crashAt(env.stateMachine.faults, 'start') },
  {
    point: 'after StartExecution, before marking the key started',
    at: (env: ReturnType<typeof setup>) => crashAt(env.idempotency.faults, 'markStarted'),
  },
];

/** The first request's run: the one execution the key names, whatever the crash left. */
const keyRun = (env: ReturnType<typeof setup>) => env.idempotency.held(PROJECT, KEY)!.execution_id;

/** An SDK error after the SDK's own retries (`$metadata.attempts`, as its retry middleware sets it). */
const afterAttempts = (name: string, attempts: number) => Object.assign(awsError(name), { $metadata: { attempts } });

/** StartExecution failures that do not say whether the execution started: the request may have gone through. */
const UNCLEAR_START_FAILURES = [
  { failure: 'a timeout', error: () => awsError('TimeoutError') },
  { failure: 'a 5xx', error: () => awsError('ServiceUnavailable') },
  { failure: 'a reset connection', error: () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) },
  {
    failure: 'throttling after the SDK retried (an earlier attempt may have timed out)',
    error: () => afterAttempts('ThrottlingException', 3),
  },
];

describe('a retry after the first request died before its key said started', () => {
  it.each(CRASH_POINTS)('converges on the one execution when the first request died $point', async ({ at }) => {
    const env = setup();
    const body = request('only once');
    const crashed = at(env);
    void env.start({ body });
    await crashed;
    const executionId = keyRun(env);
    const startedBefore = env.stateMachine.startedNames();

    // Until the lease has passed, nobody can tell the dead request from a slow one: a retry sent at once waits for the
    // lease to pass (within its wait, not until the dead invocation's deadline), then finishes the same start.
    const sentAt = env.clock.now();
    const retried = await env.start({ body });

    expect(env.clock.now() - sentAt).toBeGreaterThanOrEqual(IDEMPOTENT_START_LEASE_MS);
    expect(env.clock.now() - sentAt).toBeLessThan(IDEMPOTENT_START_WAIT_MS);
    expect(startedBefore.every((name) => name === executionId)).toBe(true);
    expect(retried.executionId).toBe(executionId);
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    expect([...env.executions.items.keys()]).toEqual([executionId]);
    expect(env.executions.items.get(executionId)?.record).toMatchObject({ status: 'queued', user_id: 'user-1' });
    expect(env.contexts.contexts.has(executionId)).toBe(true);
    expect(env.events.logs.get(executionId)?.map((batch) => batch.firstId)).toEqual([1]);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'started' });
    // The message is the execution's first turn in its thread, written once or written again as the same item.
    const record = env.executions.items.get(executionId)!.record;
    const turns = env.userState.threadOf(PROJECT, 'user-1', record.thread_id);
    expect(new Set(turns.map((turn) => `${turn.at}#${turn.execution_id}#${turn.sequence}`))).toEqual(
      new Set([`${record.created_at}#${executionId}#1`]),
    );
  });

  it.each(CRASH_POINTS)(
    'gives a retry sent just after the lease the one execution at once when the first request died $point',
    async ({ at }) => {
      const env = setup();
      const crashed = at(env);
      void env.start();
      await crashed;
      const executionId = keyRun(env);

      env.clock.advance(IDEMPOTENT_START_LEASE_MS);
      const sentAt = env.clock.now();
      const retried = await env.start();

      // At once: no pause, where the dead invocation's deadline was 15 minutes away.
      expect(env.clock.now()).toBe(sentAt);
      expect(retried.executionId).toBe(executionId);
      expect(env.stateMachine.startedNames()).toEqual([executionId]);
      expect([...env.executions.items.keys()]).toEqual([executionId]);
      expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'started' });
    },
  );

  it('keeps the execution a first answer named when its key could not be marked started', async () => {
    const env = setup();
    env.idempotency.faults.failNext('markStarted', awsError('ProvisionedThroughputExceededException'));
    const first = await env.start();
    expect(first.started).toBeDefined();

    env.clock.advance(IDEMPOTENT_START_LEASE_MS);
    const retried = await env.start();

    expect(retried).toEqual({ executionId: first.executionId });
    expect(env.stateMachine.startedNames()).toEqual([first.executionId]);
    expect(env.executions.items.size).toBe(1);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: first.executionId, state: 'started' });
  });

  it('sends the same start again, rewriting nothing, when the execution went on after the crash', async () => {
    const env = setup();
    const body: ExecuteRequest = { ...request(), initial_memory: { plan: 'gold' } };
    const crashed = crashAt(env.idempotency.faults, 'markStarted');
    void env.start({ body });
    await crashed;
    const executionId = keyRun(env);
    const input = env.stateMachine.executions.get(executionId)!.input;
    // The execution goes on: its step marks it running, and a memory node changes what initial_memory wrote.
    await env.executions.transition(executionId, ['queued'], { status: 'running', total_steps: 2 });
    await env.userState.writeMemory(PROJECT, 'user-1', { plan: 'platinum' });

    env.clock.advance(IDEMPOTENT_START_LEASE_MS);
    const retried = await env.start({ body });

    expect(retried).toEqual({ executionId });
    expect(env.stateMachine.faults.count('start')).toBe(2);
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    expect(env.stateMachine.executions.get(executionId)!.input).toEqual(input);
    expect(env.executions.items.get(executionId)?.record).toMatchObject({ status: 'running', total_steps: 2 });
    expect(env.userState.memoryOf(PROJECT, 'user-1')).toEqual({ plan: 'platinum' });
  });

  it('lets one of several retries at once finish the start; the others join it', async () => {
    const env = setup();
    const crashed = crashAt(env.stateMachine.faults, 'start');
    void env.start();
    await crashed;
    const executionId = keyRun(env);

    env.clock.advance(IDEMPOTENT_START_LEASE_MS);
    const retries = await Promise.all(Array.from({ length: 4 }, () => env.start()));

    expect(retries.map((run) => run.executionId)).toEqual(Array.from({ length: 4 }, () => executionId));
    expect(env.idempotency.faults.count('takeOver')).toBeGreaterThanOrEqual(1);
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    expect(env.executions.items.size).toBe(1);
  });

  it('still refuses another request with the key with 422, and starts nothing', async () => {
    const env = setup();
    const crashed = crashAt(env.executions.faults, 'create');
    void env.start();
    await crashed;

    env.clock.advance(IDEMPOTENT_START_LEASE_MS);
    const error = await env.start({ body: request('something else') }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(UnprocessableContentError);
    expect(env.stateMachine.startedNames()).toEqual([]);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ state: 'starting' });
  });

  it('hands the key back when its own start fails, so the next retry finishes it at once', async () => {
    const env = setup();
    const crashed = crashAt(env.stateMachine.faults, 'start');
    void env.start();
    await crashed;
    const executionId = keyRun(env);
    env.clock.advance(IDEMPOTENT_START_LEASE_MS);

    env.stateMachine.faults.failNext('start', awsError('ServiceUnavailable'));
    const refused = await env.start().catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(ServiceUnavailableError);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({
      execution_id: executionId,
      state: 'launching',
      starting_until_ms: env.clock.now(),
    });
    expect(env.executions.items.get(executionId)?.record.status).toBe('queued');

    const retried = await env.start();
    expect(retried).toEqual({ executionId });
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
  });

  it('keeps the items of a start that was refused when its key cannot be freed, for the retry that finishes it', async () => {
    const env = setup();
    env.stateMachine.faults.failNext('start', awsError('ExecutionLimitExceeded'));
    env.idempotency.faults.failNext('release', awsError('ProvisionedThroughputExceededException'));
    const failed = await env.start().catch((caught: unknown) => caught);
    expect(failed).toBeInstanceOf(ServiceUnavailableError);
    const executionId = keyRun(env);
    const record = env.executions.items.get(executionId)!.record;
    expect(record.status).toBe('queued');
    expect(env.userState.threadOf(PROJECT, 'user-1', record.thread_id)).toHaveLength(1);

    env.clock.advance(IDEMPOTENT_START_LEASE_MS);
    const retried = await env.start();

    expect(retried).toEqual({ executionId });
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
  });

  it('joins the execution a key of the previous release names when that execution went on', async () => {
    const env = setup();
    const first = await env.start({ key: undefined });
    await env.executions.transition(first.executionId, ['queued'], { status: 'completed' });
    env.idempotency.seed(PROJECT, KEY, {
      execution_id: first.executionId,
      request_sha256: requestFingerprint('echo', request()),
      state: 'starting',
      starting_until_ms: env.clock.now() - 1,
      expires_at: ttlSeconds(env.clock.now() + IDEMPOTENCY_KEY_RETENTION_MS),
    });

    const retried = await env.start();

    expect(retried).toEqual({ executionId: first.executionId });
    expect(env.stateMachine.startedNames()).toEqual([first.executionId]);
  });
});

/**
 * Holds the next call of `method` where a slow request would be stuck, until `resume()`, then lets it go on or fail with
 * `error`; `reached` settles when it gets there.
 */
function holdAt<Method extends string>(faults: Faults<Method>, method: Method, error?: Error) {
  let resume!: () => void;
  const released = new Promise<void>((resolve) => (resume = resolve));
  const reached = new Promise<void>((arrived) => {
    faults.beforeNext(method, async () => {
      arrived();
      await released;
      if (error) throw error;
    });
  });
  return { reached, resume };
}

/** What a request answered, or the error it was answered with. */
const settled = <T>(answer: Promise<T>) => answer.catch((caught: unknown) => caught);

/**
 * A first request that is alive but slow: it outlives its lease, a retry takes the key over and finishes the start,
 * and then the slow one goes on. It must change nothing of the key, start nothing more, and answer only the key's run.
 */
describe('a request that outlives its lease on the key', () => {
  it('stops before writing the execution when its lease passed on the way, leaving the key to its retry', async () => {
    const env = setup();
    // The publication read takes the whole lease.
    env.publications.faults.beforeNext('getWorkflow', () => env.clock.advance(IDEMPOTENT_START_LEASE_MS));

    const slow = await settled(env.start());

    expect(slow).toBeInstanceOf(ServiceUnavailableError);
    const executionId = keyRun(env);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'starting' });
    expect(env.idempotency.faults.count('release')).toBe(0);
    expect(env.executions.items.size).toBe(0);
    expect(env.contexts.contexts.size).toBe(0);

    const sentAt = env.clock.now();
    const retried = await env.start();
    expect(env.clock.now()).toBe(sentAt);
    expect(retried.executionId).toBe(executionId);
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
  });

  it('stops before StartExecution when its lease leaves no margin once the execution is written', async () => {
    const env = setup();
    // The `launching` write comes back with less of the lease left than its margin.
    env.idempotency.faults.beforeNext('markLaunching', () =>
      env.clock.advance(IDEMPOTENT_START_LEASE_MS - IDEMPOTENT_START_LEASE_MARGIN_MS),
    );

    const slow = await settled(env.start());

    expect(slow).toBeInstanceOf(ServiceUnavailableError);
    const executionId = keyRun(env);
    expect(env.stateMachine.faults.count('start')).toBe(0);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'launching' });
    expect(env.executions.items.get(executionId)?.record.status).toBe('queued');

    env.clock.advance(IDEMPOTENT_START_LEASE_MARGIN_MS);
    const retried = await env.start();
    expect(retried).toEqual({ executionId });
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
  });

  it('is refused `launching` once a retry has taken the key over, and starts nothing; the retry starts the one execution', async () => {
    const env = setup();
    const slowMark = holdAt(env.idempotency.faults, 'markLaunching');
    const slow = settled(env.start());
    await slowMark.reached;
    const executionId = keyRun(env);

    env.clock.advance(IDEMPOTENT_START_LEASE_MS);
    const retryMark = holdAt(env.idempotency.faults, 'markLaunching');
    const retry = env.start();
    await retryMark.reached;
    // The retry holds the key under its own lease, still `starting`, and has written the execution again: the slow one's
    // `launching` is refused by the lease alone.
    const takenOver = structuredClone(env.idempotency.held(PROJECT, KEY)!);
    expect(takenOver).toMatchObject({ execution_id: executionId, state: 'starting' });
    slowMark.resume();

    expect(await slow).toBeInstanceOf(ServiceUnavailableError);
    expect(env.idempotency.held(PROJECT, KEY)).toEqual(takenOver);
    expect(env.idempotency.faults.count('release')).toBe(0);
    expect(env.stateMachine.faults.count('start')).toBe(0);
    expect(env.executions.items.get(executionId)?.record.status).toBe('queued');

    retryMark.resume();
    const retried = await retry;

    expect(retried.executionId).toBe(executionId);
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    expect(env.stateMachine.faults.count('start')).toBe(1);
    expect([...env.executions.items.keys()]).toEqual([executionId]);
    expect(env.events.logs.get(executionId)?.map((batch) => batch.firstId)).toEqual([1]);
    const record = env.executions.items.get(executionId)!.record;
    expect(env.userState.threadOf(PROJECT, 'user-1', record.thread_id)).toHaveLength(1);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'started' });
  });

  it('is refused `started` once a retry has taken the key over, and answers the same execution, the one execution', async () => {
    const env = setup();
    const slowStart = holdAt(env.stateMachine.faults, 'start');
    const slow = settled(env.start());
    await slowStart.reached;
    const executionId = keyRun(env);
    const input = JSON.parse(env.idempotency.held(PROJECT, KEY)!.start_input!) as unknown;

    // The retry takes the key over from `launching` and sends the same start; it is held before its own mark.
    env.clock.advance(IDEMPOTENT_START_LEASE_MS);
    const retryMark = holdAt(env.idempotency.faults, 'markStarted');
    const retry = env.start();
    await retryMark.reached;
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    const takenOver = structuredClone(env.idempotency.held(PROJECT, KEY)!);
    slowStart.resume();

    // The slow one's start is the same start (Step Functions answers it with the execution of that name); its mark is
    // refused by the lease alone, and it answers the key's run as a joined one.
    expect(await slow).toEqual({ executionId });
    expect(env.idempotency.held(PROJECT, KEY)).toEqual(takenOver);
    retryMark.resume();
    expect(await retry).toEqual({ executionId });

    expect(env.stateMachine.faults.count('start')).toBe(2);
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    expect(env.stateMachine.executions.get(executionId)!.input).toEqual(input);
    expect([...env.executions.items.keys()]).toEqual([executionId]);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'started' });
  });

  it.each([
    { failure: 'refused (it would free the key)', error: () => awsError('ExecutionLimitExceeded') },
    { failure: 'unclear (it would hand the key back)', error: () => awsError('TimeoutError') },
  ])('leaves a key taken over as it is when its StartExecution comes back $failure', async ({ error }) => {
    const env = setup();
    const slowStart = holdAt(env.stateMachine.faults, 'start', error());
    const slow = settled(env.start());
    await slowStart.reached;
    const executionId = keyRun(env);

    env.clock.advance(IDEMPOTENT_START_LEASE_MS);
    const retryMark = holdAt(env.idempotency.faults, 'markStarted');
    const retry = env.start();
    await retryMark.reached;
    const takenOver = structuredClone(env.idempotency.held(PROJECT, KEY)!);
    expect(takenOver).toMatchObject({ execution_id: executionId, state: 'launching' });
    slowStart.resume();

    expect(await slow).toBeInstanceOf(ServiceUnavailableError);
    // Neither freed nor handed back, and the execution's items are not taken back: the execution is going.
    expect(env.idempotency.held(PROJECT, KEY)).toEqual(takenOver);
    const record = env.executions.items.get(executionId)!.record;
    expect(record.status).toBe('queued');
    expect(env.userState.threadOf(PROJECT, 'user-1', record.thread_id)).toHaveLength(1);

    retryMark.resume();
    expect(await retry).toEqual({ executionId });
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'started' });
  });

  it('never holds a key past its invocation deadline and the margin', async () => {
    const env = setup();
    const crashed = crashAt(env.stateMachine.faults, 'start');
    void startOrJoin(env.deps, { projectId: PROJECT }, 'echo', request(), { key: KEY, invocationDeadlineMs: env.clock.now() + 1000 });
    await crashed;

    expect(env.idempotency.held(PROJECT, KEY)!.starting_until_ms).toBe(env.clock.now() + 1000 + IDEMPOTENT_START_LEASE_MARGIN_MS);
  });
});

describe('a first request whose StartExecution fails without a clear answer', () => {
  it.each(UNCLEAR_START_FAILURES)(
    'answers 503 after $failure and keeps the key, the record and the message for the retry',
    async ({ error }) => {
      const env = setup();
      env.stateMachine.faults.failNext('start', error());

      const refused = await env.start().catch((caught: unknown) => caught);

      expect(refused).toBeInstanceOf(ServiceUnavailableError);
      expect((refused as Error).message).toBe('The execution service is unavailable; retry later');
      const [{ execution_id: executionId }] = env.executions.all() as [ExecutionRecord];
      // Handed back, not freed: the key still names the execution, and the next retry may take it over at once.
      expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({
        execution_id: executionId,
        state: 'launching',
        starting_until_ms: env.clock.now(),
      });
      expect(env.idempotency.faults.count('release')).toBe(0);
      const record = env.executions.items.get(executionId)!.record;
      expect(record.status).toBe('queued');
      expect(env.userState.threadOf(PROJECT, 'user-1', record.thread_id)).toHaveLength(1);

      // The retry sends the same StartExecution (same name, same input): here the first never got through, so this starts it.
      const retried = await env.start();
      expect(retried).toEqual({ executionId });
      expect(env.stateMachine.startedNames()).toEqual([executionId]);
      expect(env.executions.items.size).toBe(1);
      expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'started' });
    },
  );

  it('joins the one execution when the first start went through and only its answer was lost', async () => {
    const env = setup();
    // StartExecution reaches Step Functions, the execution's first step marks it running, and the answer is lost on the way back.
    env.stateMachine.loseNextAnswer(awsError('TimeoutError'), async () => {
      const [name] = env.stateMachine.startedNames();
      await env.executions.transition(name!, ['queued', 'running'], { status: 'running' });
    });

    const refused = await env.start().catch((caught: unknown) => caught);

    expect(refused).toBeInstanceOf(ServiceUnavailableError);
    const [executionId] = env.stateMachine.startedNames() as [string];
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'launching' });
    const record = env.executions.items.get(executionId)!.record;
    expect(record.status).toBe('running');
    expect(env.userState.threadOf(PROJECT, 'user-1', record.thread_id)).toHaveLength(1);

    const retried = await env.start();

    expect(retried).toEqual({ executionId });
    expect(env.stateMachine.faults.count('start')).toBe(2);
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    expect(env.executions.items.size).toBe(1);
    expect(env.executions.items.get(executionId)!.record.status).toBe('running');
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: executionId, state: 'started' });
  });

  it('lets a request waiting on the key join that execution instead of starting a second', async () => {
    const env = setup();
    env.stateMachine.loseNextAnswer(awsError('TimeoutError'));

    const [first, waiting] = await Promise.allSettled([env.start(), env.start()]);

    expect(first.status === 'rejected' && first.reason).toBeInstanceOf(ServiceUnavailableError);
    const [executionId] = env.stateMachine.startedNames() as [string];
    expect(waiting).toEqual({ status: 'fulfilled', value: { executionId } });
    expect(env.stateMachine.startedNames()).toEqual([executionId]);
    expect(env.executions.items.size).toBe(1);
  });
});
