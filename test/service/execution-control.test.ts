import { describe, expect, it } from 'vitest';
import { takeUpDecision } from '#executions/approval-decision.ts';
import { decideApproval, stopExecution } from '#executions/execution-control.ts';
import type { ExecutionRecord } from '#executions/execution-model.ts';
import { startExecution, type StartDeps } from '#executions/execution-service.ts';
import type { ExecuteRequest } from '#executions/execute-request.ts';
import { ConflictError, NotFoundError, ServiceUnavailableError } from '#shared/errors.ts';
import { APPROVAL_DECISION_LEASE_MS, APPROVAL_REISSUE_WAIT_MS, APPROVAL_TAKE_UP_MS } from '#shared/limits.ts';
import { awsError } from '../support/fakes/faults.ts';
import { PROJECT, executionEnvironment } from '../support/fakes/execution-environment.ts';

const caller = { projectId: PROJECT };
const CALLBACK_URL = 'https://hooks.example.com/executions';

function setup() {
  const env = executionEnvironment();
  const deps: StartDeps = env.start;
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

describe('decideApproval', () => {
  it('claims the approval and sends the decision with the task token', async () => {
    const env = setup();
    const run = waitingRun(env);
    const answer = await decideApproval(env.deps, caller, run.execution_id, 'approved', 'fine');

    expect(answer).toEqual({ execution_id: run.execution_id, approval_id: 'appr-1', decision: 'approved', status: 'running' });
    expect(env.stateMachine.resumed).toEqual([
      { taskToken: run.task_token, output: { decision: 'approved', feedback: 'fine', approval_id: 'appr-1' } },
    ]);
    // Delivered: the claim holds the execution until its step takes the decision up (its event logged first).
    const claim = { approval_id: 'appr-1', decision: 'approved', fingerprint: expect.any(String) };
    expect(env.executions.stored(run.execution_id)).toMatchObject({
      status: 'running',
      pending_approval: run.pending_approval,
      task_token: run.task_token,
      approval_lease_until: env.clock.now() + APPROVAL_TAKE_UP_MS,
      approval_decision: { ...claim, delivered: true },
    });

    expect(await takeUpDecision(env.executions, run.execution_id, { decision: 'approved', feedback: 'fine', approval_id: 'appr-1' })).toBe(
      true,
    );
    expect(env.executions.stored(run.execution_id)).toMatchObject({
      status: 'running',
      pending_approval: null,
      task_token: null,
      approval_lease_until: null,
      approval_decision: { ...claim, delivered: true, resumed: true },
    });
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

      // Restored as it was: the same approval and token, so the caller's retry can succeed; the claim's decision stays
      // on the record, never delivered, so it answers no repeat.
      expect(env.executions.stored(run.execution_id)).toEqual({
        ...run,
        approval_lease_until: null,
        approval_decision: { approval_id: 'appr-1', decision: 'approved', fingerprint: expect.any(String) },
      });
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
    // The decision's send outlasts its claim's lease, and a stop cancels the (claimed, running) run and starts its callback.
    env.stateMachine.faults.beforeNext('resume', async () => {
      env.clock.advance(APPROVAL_DECISION_LEASE_MS);
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
      env.clock.advance(APPROVAL_DECISION_LEASE_MS);
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
      approval_lease_until: env.clock.now() + APPROVAL_TAKE_UP_MS,
      approval_decision: { approval_id: 'appr-1', decision: 'rejected', fingerprint: expect.any(String), delivered: true },
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
    const answer = await decideApproval(env.deps, caller, run.execution_id, 'approved', 'retry');
    expect(env.stateMachine.resumed).toHaveLength(1);
    // The same request again is answered as the first was; another decision is refused. Nothing is sent again.
    expect(await decideApproval(env.deps, caller, run.execution_id, 'approved', 'retry')).toEqual(answer);
    await expect(decideApproval(env.deps, caller, run.execution_id, 'approved', 'other')).rejects.toBeInstanceOf(ConflictError);
    expect(env.stateMachine.resumed).toHaveLength(1);
  });

  it('does not fail an execution whose taken-over claim finds the token answered: the first decision may have landed', async () => {
    const env = setup();
    // The first decision was delivered, but the write marking it failed and its step has not taken it up yet.
    const first = { approval_id: 'appr-1', decision: 'approved' as const, fingerprint: 'first-request' };
    const run = waitingRun(env, { status: 'running', approval_lease_until: env.clock.now() - 1, approval_decision: first });
    env.stateMachine.tokens.set(run.task_token!, 'answered');

    const error = await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'late').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConflictError);
    // Left to the step's take-up: the approval and token stay, with the first claim's decision; the take-over's lease
    // holds a stop off a while longer.
    expect(env.executions.stored(run.execution_id)).toMatchObject({
      status: 'running',
      error: null,
      finished_at: null,
      pending_approval: run.pending_approval,
      task_token: run.task_token,
      approval_lease_until: env.clock.now() + APPROVAL_DECISION_LEASE_MS,
      approval_decision: first,
    });
    expect(env.stateMachine.startedNames()).toEqual([]);
  });

  it('answers a taken-over claim that finds the token answered 200 when it repeats the first decision', async () => {
    const env = setup();
    const lost = await decideApproval(env.deps, caller, waitingRun(env).execution_id, 'approved', 'same');
    // Its invocation died after the send, before marking it delivered: the claim passes with its lease.
    const record = env.executions.items.get(lost.execution_id)!.record;
    Object.assign(record, { approval_lease_until: env.clock.now() - 1 });
    delete record.approval_decision!.delivered;

    expect(await decideApproval(env.deps, caller, lost.execution_id, 'approved', 'same')).toEqual(lost);
    expect(env.executions.stored(lost.execution_id)).toMatchObject({
      approval_lease_until: env.clock.now() + APPROVAL_TAKE_UP_MS,
      approval_decision: { approval_id: 'appr-1', decision: 'approved', delivered: true },
    });
    await expect(decideApproval(env.deps, caller, lost.execution_id, 'rejected', 'same')).rejects.toBeInstanceOf(ConflictError);
    expect(env.stateMachine.resumed).toHaveLength(1);
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

describe('a decision and a stop on the same execution', () => {
  const APPROVE = { decision: 'approved' as const, feedback: 'ship', approval_id: 'appr-1' };

  it("answers a stop that comes during a decision's claim 409, until the step has taken the decision up", async () => {
    const env = setup();
    const run = waitingRun(env);
    const duringSend: unknown[] = [];
    env.stateMachine.faults.beforeNext('resume', async () => {
      duringSend.push(await stopExecution(env.deps, caller, run.execution_id).catch((caught: unknown) => caught));
    });

    expect(await decideApproval(env.deps, caller, run.execution_id, 'approved', 'ship')).toMatchObject({ decision: 'approved' });
    expect(duringSend[0]).toBeInstanceOf(ConflictError);
    expect((duringSend[0] as Error).message).toBe(
      `Execution ${run.execution_id} is taking up a decision on approval appr-1; stop it once it has resumed`,
    );
    // Delivered, not yet taken up: still 409, and nothing is written or sent.
    await expect(stopExecution(env.deps, caller, run.execution_id)).rejects.toBeInstanceOf(ConflictError);
    expect(env.executions.stored(run.execution_id).status).toBe('running');
    expect(env.stateMachine.faults.count('stop')).toBe(0);
    expect(env.events.logs.get(run.execution_id)).toBeUndefined();

    // Taken up (its event logged first, by the step): the execution goes on with the decision, and a stop now cancels it.
    await takeUpDecision(env.executions, run.execution_id, APPROVE);
    expect(await stopExecution(env.deps, caller, run.execution_id)).toEqual({ execution_id: run.execution_id, status: 'cancelled' });
    // The decision applied before the stop: a retry of it is still answered as it was.
    expect(await decideApproval(env.deps, caller, run.execution_id, 'approved', 'ship')).toMatchObject({ approval_id: 'appr-1' });
  });

  it('answers 409 to a stop whose write meets a claim taken after its read', async () => {
    const env = setup();
    const run = waitingRun(env, { status: 'running', pending_approval: null, task_token: null });
    env.executions.faults.beforeNext('transition', () => {
      env.executions.items.get(run.execution_id)!.record.approval_lease_until = env.clock.now() + APPROVAL_DECISION_LEASE_MS;
    });
    await expect(stopExecution(env.deps, caller, run.execution_id)).rejects.toThrow(/taking up a decision/);
    expect(env.executions.stored(run.execution_id).status).toBe('running');
  });

  it("lets a stop go ahead once a claim's lease has passed with nothing sent (its holder died)", async () => {
    const env = setup();
    const run = waitingRun(env, { status: 'running', approval_lease_until: env.clock.now() - 1 });
    expect(await stopExecution(env.deps, caller, run.execution_id)).toEqual({ execution_id: run.execution_id, status: 'cancelled' });
    expect(env.executions.stored(run.execution_id)).toMatchObject({ status: 'cancelled', pending_approval: null, task_token: null });
  });

  it('never answers 200 to a decision whose execution a stop ended first (its send outlasted the lease)', async () => {
    const env = setup();
    const run = waitingRun(env);
    env.stateMachine.faults.beforeNext('resume', async () => {
      env.clock.advance(APPROVAL_DECISION_LEASE_MS);
      await stopExecution(env.deps, caller, run.execution_id);
    });

    const error = await decideApproval(env.deps, caller, run.execution_id, 'approved', 'ship').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as Error).message).toBe(`Execution ${run.execution_id} was stopped before approval appr-1 could be taken up`);
    expect(env.executions.stored(run.execution_id).status).toBe('cancelled');
    expect(env.executions.stored(run.execution_id).approval_decision?.delivered).toBeUndefined();
    // Its retry learns the same: the decision did not apply.
    await expect(decideApproval(env.deps, caller, run.execution_id, 'approved', 'ship')).rejects.toThrow(/not waiting for an approval/);
  });
});

describe('a decision repeated', () => {
  it('answers a decision retried after its answer was lost with the same 200, before and after its step took it up', async () => {
    const env = setup();
    const run = waitingRun(env);
    const lost = await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'too risky');

    expect(await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'too risky')).toEqual(lost);
    await takeUpDecision(env.executions, run.execution_id, { decision: 'rejected', feedback: 'too risky', approval_id: 'appr-1' });
    expect(await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'too risky')).toEqual(lost);
    // Once the execution has finished too.
    env.executions.items.get(run.execution_id)!.record.status = 'completed';
    expect(await decideApproval(env.deps, caller, run.execution_id, 'rejected', 'too risky')).toEqual(lost);
    expect(env.stateMachine.resumed).toHaveLength(1);
  });

  it('refuses another decision on the approval already decided: the other decision, or other feedback', async () => {
    const env = setup();
    const run = waitingRun(env);
    await decideApproval(env.deps, caller, run.execution_id, 'approved', 'ok');
    for (const taken of [false, true]) {
      if (taken) await takeUpDecision(env.executions, run.execution_id, { decision: 'approved', feedback: 'ok', approval_id: 'appr-1' });
      await expect(decideApproval(env.deps, caller, run.execution_id, 'rejected', 'ok')).rejects.toBeInstanceOf(ConflictError);
      await expect(decideApproval(env.deps, caller, run.execution_id, 'approved', 'OK')).rejects.toBeInstanceOf(ConflictError);
    }
    expect(env.stateMachine.resumed).toHaveLength(1);
  });

  it('answers two copies of one decision sent together with the same 200, and sends it once', async () => {
    const env = setup();
    const run = waitingRun(env);
    const answers = await Promise.all([
      decideApproval(env.deps, caller, run.execution_id, 'approved', ''),
      decideApproval(env.deps, caller, run.execution_id, 'approved', ''),
    ]);
    expect(answers[0]).toEqual(answers[1]);
    expect(env.stateMachine.resumed).toHaveLength(1);
  });

  it("takes the same body sent to the execution's next approval as a decision on that one", async () => {
    const env = setup();
    const run = waitingRun(env);
    await decideApproval(env.deps, caller, run.execution_id, 'approved', '');
    await takeUpDecision(env.executions, run.execution_id, { decision: 'approved', feedback: '', approval_id: 'appr-1' });
    // The execution reaches its next approval (AwaitApproval's write).
    const next = env.stateMachine.issueToken(run.execution_id);
    Object.assign(env.executions.items.get(run.execution_id)!.record, {
      status: 'interrupted',
      pending_approval: { approval_id: 'appr-2', node_id: 'second-review', message: 'And this?' },
      task_token: next,
    });

    expect(await decideApproval(env.deps, caller, run.execution_id, 'approved', '')).toMatchObject({ approval_id: 'appr-2' });
    expect(env.stateMachine.resumed.map((sent) => sent.taskToken)).toEqual([run.task_token, next]);
  });
});
