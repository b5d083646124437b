import { describe, expect, it } from 'vitest';
import type { ExecutionRecord } from '#executions/execution-model.ts';
import { decideApproval, startExecution, stopExecution, waitUntilSettled, type StartDeps } from '#executions/execution-service.ts';
import { createSettleTimes } from '#executions/settle-polling.ts';
import type { ExecuteRequest } from '#executions/execute-request.ts';
import { ConflictError, NotFoundError, ServiceUnavailableError, ValidationError } from '#shared/errors.ts';
import { APPROVAL_DECISION_LEASE_MS, APPROVAL_REISSUE_WAIT_MS } from '#shared/limits.ts';
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

/** An execution waiting at an approval, as AwaitApproval leaves it: interrupted, with the pending approval and its task token. */
function waitingRun(env: ReturnType<typeof setup>, extra: Partial<ExecutionRecord> = {}): ExecutionRecord {
  const executionId = `exec-${env.executions.items.size + 1}`;
  return env.executions.seed({
    execution_id: executionId,
    project_id: PROJECT,
    publication_id: `pub_${PROJECT}`,
    workflow_id: 'gate',
    user_id: 'user-1',
    thread_id: 'thread-1',
    status: 'interrupted',
    output: null,
    error: null,
    total_steps: 2,
    created_at: '2025-03-10T11:59:00.000Z',
    finished_at: null,
    pending_approval: { approval_id: 'appr-1', node_id: 'review', message: 'Ship it?' },
    task_token: env.stateMachine.issueToken(executionId),
    callback_url: null,
    webhook_secret: null,
    callback_state: 'none',
    ...extra,
  });
}

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

describe('decideApproval', () => {
  it('claims the approval and sends the decision with the task token', async () => {
    const env = setup();
    const run = waitingRun(env);
    const answer = await decideApproval(env.deps, caller, run.execution_id, 'approved', 'fine');

    expect(answer).toEqual({ execution_id: run.execution_id, approval_id: 'appr-1', decision: 'approved', status: 'running' });
    expect(env.stateMachine.resumed).toEqual([
      { taskToken: run.task_token, output: { decision: 'approved', feedback: 'fine', approval_id: 'appr-1' } },
    ]);
    expect(env.executions.stored(run.execution_id)).toMatchObject({ status: 'running', pending_approval: null, task_token: null });
  });

  it.each(['ThrottlingException', 'ServiceUnavailable'])(
    'gives the approval back and answers 503 when sending fails with %s',
    async (name) => {
      const env = setup();
      const run = waitingRun(env, { callback_url: CALLBACK_URL, callback_state: 'pending' });
      env.stateMachine.faults.failNext('resume', awsError(name));

      const error = await decideApproval(env.deps, caller, run.execution_id, 'approved', '').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ServiceUnavailableError);
      expect((error as ServiceUnavailableError).statusCode).toBe(503);

      // Restored exactly as it was: the same approval and token, so the caller's retry can succeed.
      expect(env.executions.stored(run.execution_id)).toEqual({ ...run, approval_lease_until: null });
      expect(env.stateMachine.tokens.get(run.task_token!)).toBe('waiting');
      expect(env.stateMachine.startedNames()).toEqual([]);

      await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'second try');
      expect(env.stateMachine.resumed.map((sent) => sent.output)).toEqual([
        { decision: 'rejected', feedback: 'second try', approval_id: 'appr-1' },
      ]);
      expect(env.executions.stored(run.execution_id).status).toBe('running');
    },
  );

  const deadTokens = [
    ['TaskTimedOut', 'The approval was not answered in time'],
    ['TaskDoesNotExist', 'The approval could not be delivered: the execution was no longer waiting for it'],
    ['InvalidToken', 'The approval could not be delivered: its task token is invalid'],
  ] as const;

  it.each(deadTokens)('fails the execution with its callback and answers 409 when the token is dead (%s)', async (name, runError) => {
    const env = setup();
    const run = waitingRun(env, { callback_url: CALLBACK_URL, callback_state: 'pending' });
    // Make the token dead the way Step Functions would: timed out, already answered, or never issued.
    if (name === 'TaskTimedOut') env.stateMachine.timeOut(run.task_token!);
    // TaskDoesNotExist fails the execution when the token was found dead before (the first time, the approval goes back).
    if (name === 'TaskDoesNotExist') {
      env.stateMachine.tokens.set(run.task_token!, 'answered');
      env.executions.items.get(run.execution_id)!.record.dead_task_token = run.task_token;
    }
    if (name === 'InvalidToken') env.stateMachine.tokens.delete(run.task_token!);
    env.clock.advance(5_000);

    const error = await decideApproval(env.deps, caller, run.execution_id, 'approved', '').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).statusCode).toBe(409);
    expect((error as Error).message).toContain(name);

    expect(env.executions.stored(run.execution_id)).toMatchObject({
      status: 'failed',
      error: runError,
      finished_at: env.clock.iso(),
      pending_approval: null,
      task_token: null,
      callback_state: 'pending',
    });
    expect(env.stateMachine.executions.get(`callback-${run.execution_id}`)?.input).toEqual({
      mode: 'callback',
      execution_id: run.execution_id,
    });
    expect(env.stateMachine.resumed).toEqual([]);
  });

  it('gives the approval back once when its task no longer exists, and sends with the token the retried task records', async () => {
    const env = setup();
    const run = waitingRun(env, { callback_url: CALLBACK_URL, callback_state: 'pending' });
    // AwaitApproval crashed after recording its wait: Step Functions closed that attempt's token and retries the task.
    env.stateMachine.tokens.set(run.task_token!, 'answered');

    const first = await decideApproval(env.deps, caller, run.execution_id, 'approved', 'ok').catch((caught: unknown) => caught);
    expect(first).toBeInstanceOf(ServiceUnavailableError);
    expect((first as ServiceUnavailableError).retryAfterSeconds).toBe(APPROVAL_REISSUE_WAIT_MS / 1_000);
    expect(env.executions.stored(run.execution_id)).toMatchObject({
      status: 'interrupted',
      pending_approval: run.pending_approval,
      dead_task_token: run.task_token,
      finished_at: null,
    });
    expect(env.stateMachine.startedNames()).toEqual([]);

    // The retried attempt records its own token; the caller's retry is sent with it.
    const reissued = env.stateMachine.issueToken(run.execution_id);
    env.executions.items.get(run.execution_id)!.record.task_token = reissued;
    await decideApproval(env.deps, caller, run.execution_id, 'approved', 'ok');
    expect(env.stateMachine.resumed).toEqual([
      { taskToken: reissued, output: { decision: 'approved', feedback: 'ok', approval_id: 'appr-1' } },
    ]);
  });

  it('fails the execution when the same token is found dead twice: nothing replaced it', async () => {
    const env = setup();
    const run = waitingRun(env);
    env.stateMachine.tokens.set(run.task_token!, 'answered');
    await expect(decideApproval(env.deps, caller, run.execution_id, 'approved', '')).rejects.toBeInstanceOf(ServiceUnavailableError);
    await expect(decideApproval(env.deps, caller, run.execution_id, 'approved', '')).rejects.toBeInstanceOf(ConflictError);
    expect(env.executions.stored(run.execution_id)).toMatchObject({
      status: 'failed',
      error: 'The approval could not be delivered: the execution was no longer waiting for it',
    });
  });

  it('fails an execution with a dead token without starting a callback when it has none', async () => {
    const env = setup();
    const run = waitingRun(env);
    env.stateMachine.timeOut(run.task_token!);
    await expect(decideApproval(env.deps, caller, run.execution_id, 'rejected', '')).rejects.toBeInstanceOf(ConflictError);
    expect(env.executions.stored(run.execution_id).status).toBe('failed');
    expect(env.stateMachine.startedNames()).toEqual([]);
  });

  it('keeps a stop that won the race: no failure, no second callback, when the token turns out dead', async () => {
    const env = setup();
    const run = waitingRun(env, { callback_url: CALLBACK_URL, callback_state: 'pending' });
    env.stateMachine.timeOut(run.task_token!);
    // While the decision is being sent, a stop cancels the (claimed, running) run and starts its callback.
    env.stateMachine.faults.beforeNext('resume', async () => {
      await stopExecution(env.deps, caller, run.execution_id);
    });

    await expect(decideApproval(env.deps, caller, run.execution_id, 'approved', '')).rejects.toBeInstanceOf(ConflictError);
    expect(env.executions.stored(run.execution_id)).toMatchObject({ status: 'cancelled', error: null });
    expect(env.stateMachine.startedNames()).toEqual([`callback-${run.execution_id}`]);
  });

  it('does not give the approval back to an execution that was stopped while the decision failed transiently', async () => {
    const env = setup();
    const run = waitingRun(env);
    env.stateMachine.faults.beforeNext('resume', async () => {
      await stopExecution(env.deps, caller, run.execution_id);
    });
    env.stateMachine.faults.failNext('resume', awsError('ThrottlingException'));

    await expect(decideApproval(env.deps, caller, run.execution_id, 'approved', '')).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(env.executions.stored(run.execution_id)).toMatchObject({ status: 'cancelled', pending_approval: null, task_token: null });
  });

  it('lets only one of two concurrent decisions through', async () => {
    const env = setup();
    const run = waitingRun(env);
    const results = await Promise.allSettled([
      decideApproval(env.deps, caller, run.execution_id, 'approved', 'first'),
      decideApproval(env.deps, caller, run.execution_id, 'rejected', 'second'),
    ]);
    expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((result) => result.status === 'rejected')?.reason).toBeInstanceOf(ConflictError);
    expect(env.stateMachine.resumed).toHaveLength(1);
  });

  it('does not claim a newer approval with a decision read for an older one', async () => {
    const env = setup();
    const run = waitingRun(env);
    // Between the read and the claim, the approval is answered elsewhere and the execution reaches the next approval.
    env.executions.faults.beforeNext('transition', () => {
      const item = env.executions.items.get(run.execution_id)!;
      item.record.pending_approval = { approval_id: 'appr-2', node_id: 'second-review', message: 'And this?' };
      item.record.task_token = env.stateMachine.issueToken(run.execution_id);
    });

    const error = await decideApproval(env.deps, caller, run.execution_id, 'approved', '').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as Error).message).toContain('appr-1');
    expect(env.executions.stored(run.execution_id)).toMatchObject({ status: 'interrupted', pending_approval: { approval_id: 'appr-2' } });
    expect(env.stateMachine.resumed).toEqual([]);
  });

  it('leaves a way back when neither the decision nor the give-back can be written: the next decision takes the claim over once its lease passes', async () => {
    const env = setup();
    const run = waitingRun(env);
    // The send is throttled after the SDK's retries, and so is the write that would give the approval back.
    env.stateMachine.faults.beforeNext(
      'resume',
      () => void env.executions.faults.failNext('transition', awsError('ProvisionedThroughputExceededException')),
    );
    env.stateMachine.faults.failNext('resume', awsError('ThrottlingException'));

    const first = await decideApproval(env.deps, caller, run.execution_id, 'approved', 'first').catch((caught: unknown) => caught);
    expect(first).toBeInstanceOf(ServiceUnavailableError);
    // Told to come back when the claim has passed, not in a second that would only find it held.
    expect((first as ServiceUnavailableError).retryAfterSeconds).toBe(APPROVAL_DECISION_LEASE_MS / 1_000);
    const claimed = env.executions.stored(run.execution_id);
    expect(claimed).toMatchObject({
      status: 'running',
      pending_approval: run.pending_approval,
      task_token: run.task_token,
      approval_lease_until: env.clock.now() + APPROVAL_DECISION_LEASE_MS,
    });

    // While the claim holds, another decision waits a moment for it, then is told to retry when it ends (a retry sooner
    // would find it held), and nothing is sent.
    env.clock.advance(5_000);
    const leaseEnd = claimed.approval_lease_until!;
    const early = await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'early').catch((caught: unknown) => caught);
    expect(early).toBeInstanceOf(ServiceUnavailableError);
    expect((early as ServiceUnavailableError).retryAfterSeconds).toBe(Math.ceil((leaseEnd - env.clock.now()) / 1_000));
    expect(env.clock.now()).toBeLessThan(leaseEnd);
    expect(env.stateMachine.resumed).toEqual([]);

    env.clock.advance(leaseEnd - env.clock.now());
    const answer = await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'after the lease');
    expect(answer).toMatchObject({ approval_id: 'appr-1', decision: 'rejected', status: 'running' });
    expect(env.stateMachine.resumed).toEqual([
      { taskToken: run.task_token, output: { decision: 'rejected', feedback: 'after the lease', approval_id: 'appr-1' } },
    ]);
    expect(env.executions.stored(run.execution_id)).toMatchObject({
      status: 'running',
      pending_approval: null,
      task_token: null,
      approval_lease_until: null,
    });
  });

  it('waits for a live claim to land, so the loser of two decisions answers 409', async () => {
    const env = setup();
    const run = waitingRun(env);
    // Another decision has claimed the approval and is sending; it lands while this one waits.
    env.executions.items.get(run.execution_id)!.record.status = 'running';
    env.executions.items.get(run.execution_id)!.record.approval_lease_until = env.clock.now() + APPROVAL_DECISION_LEASE_MS;
    const pauses: number[] = [];
    const deps = {
      ...env.deps,
      sleep: async (ms: number) => {
        pauses.push(ms);
        Object.assign(env.executions.items.get(run.execution_id)!.record, {
          pending_approval: null,
          task_token: null,
          approval_lease_until: null,
        });
        await env.deps.sleep(ms);
      },
    };

    const error = await decideApproval(deps, caller, run.execution_id, 'rejected', '').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConflictError);
    expect(pauses).toHaveLength(1);
    expect(env.stateMachine.resumed).toEqual([]);
  });

  it('takes over the claim of a decision whose invocation died before sending, and applies the retry once', async () => {
    const env = setup();
    const heldUntil = env.clock.now() - 1;
    const run = waitingRun(env, { status: 'running', approval_lease_until: heldUntil });
    await decideApproval(env.deps, caller, run.execution_id, 'approved', 'retry');
    expect(env.stateMachine.resumed).toHaveLength(1);
    await expect(decideApproval(env.deps, caller, run.execution_id, 'approved', 'retry')).rejects.toBeInstanceOf(ConflictError);
    expect(env.stateMachine.resumed).toHaveLength(1);
  });

  it('does not fail an execution whose taken-over claim finds the token answered: the first decision may have landed', async () => {
    const env = setup();
    // The first decision was delivered, but the write clearing its claim failed.
    const run = waitingRun(env, { status: 'running', approval_lease_until: env.clock.now() - 1 });
    env.stateMachine.tokens.set(run.task_token!, 'answered');

    const error = await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'late').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConflictError);
    expect(env.executions.stored(run.execution_id)).toMatchObject({
      status: 'running',
      error: null,
      finished_at: null,
      pending_approval: null,
      task_token: null,
    });
    expect(env.stateMachine.startedNames()).toEqual([]);
  });

  it('clears its claim without touching the next approval the execution reached meanwhile', async () => {
    const env = setup();
    const run = waitingRun(env);
    const next = { approval_id: 'appr-2', node_id: 'second-review', message: 'And this?' };
    // Step Functions goes on at once: the execution pauses at its next approval before the claim is cleared.
    env.stateMachine.faults.beforeNext('resume', () => {
      env.executions.faults.beforeNext('transition', () => {
        const item = env.executions.items.get(run.execution_id)!;
        Object.assign(item.record, {
          status: 'interrupted',
          pending_approval: next,
          task_token: env.stateMachine.issueToken(run.execution_id),
          approval_lease_until: null,
        });
      });
    });

    await decideApproval(env.deps, caller, run.execution_id, 'approved', '');
    expect(env.executions.stored(run.execution_id)).toMatchObject({ status: 'interrupted', pending_approval: next });
    expect(env.executions.stored(run.execution_id).task_token).not.toBeNull();
  });

  it('answers 409 for an execution not waiting for an approval and 404 for another project’s run', async () => {
    const env = setup();
    const running = waitingRun(env, { status: 'running', pending_approval: null, task_token: null });
    const theirs = waitingRun(env, { project_id: 'project-b' });
    await expect(decideApproval(env.deps, caller, running.execution_id, 'approved', '')).rejects.toBeInstanceOf(ConflictError);
    await expect(decideApproval(env.deps, caller, theirs.execution_id, 'approved', '')).rejects.toBeInstanceOf(NotFoundError);
    expect(env.executions.stored(theirs.execution_id).status).toBe('interrupted');
    expect(env.stateMachine.resumed).toEqual([]);
  });
});

describe('stopExecution', () => {
  it('cancels an execution whose execution does not exist yet and still starts its callback', async () => {
    const env = setup();
    const run = waitingRun(env, {
      status: 'queued',
      pending_approval: null,
      task_token: null,
      callback_url: CALLBACK_URL,
      callback_state: 'pending',
    });

    expect(await stopExecution(env.deps, caller, run.execution_id)).toEqual({ execution_id: run.execution_id, status: 'cancelled' });
    expect(env.executions.stored(run.execution_id)).toMatchObject({ status: 'cancelled', finished_at: env.clock.iso() });
    expect(env.stateMachine.faults.count('stop')).toBe(1);
    expect(env.stateMachine.startedNames()).toEqual([`callback-${run.execution_id}`]);
  });

  it('still answers cancelled and starts the callback when the stop cannot reach Step Functions', async () => {
    const env = setup();
    const run = waitingRun(env, {
      status: 'running',
      pending_approval: null,
      task_token: null,
      callback_url: CALLBACK_URL,
      callback_state: 'pending',
    });
    env.stateMachine.faults.failNext('stop', awsError('ThrottlingException'));

    expect(await stopExecution(env.deps, caller, run.execution_id)).toEqual({ execution_id: run.execution_id, status: 'cancelled' });
    expect(env.executions.stored(run.execution_id)).toMatchObject({ status: 'cancelled' });
    expect(env.stateMachine.startedNames()).toEqual([`callback-${run.execution_id}`]);
  });

  it('stops the running execution by its ARN', async () => {
    const env = setup();
    const started = await startExecution(env.deps, caller, 'echo', request());
    await stopExecution(env.deps, caller, started.execution_id);
    expect(env.stateMachine.executions.get(started.execution_id)).toMatchObject({
      status: 'ABORTED',
      stopCause: 'Stopped through the API',
    });
    expect(env.executions.stored(started.execution_id).status).toBe('cancelled');
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
