import { randomUUID } from 'node:crypto';
import { ConflictError, NotFoundError, ServiceUnavailableError, ValidationError } from '#shared/errors.ts';
import {
  APPROVAL_CLAIM_WAIT_MS,
  APPROVAL_DECISION_LEASE_MS,
  APPROVAL_REISSUE_WAIT_MS,
  EXECUTION_RETENTION_MS,
  HISTORY_RETENTION_MS,
} from '#shared/limits.ts';
import { applyOverrides } from '#workflows/overrides.ts';
import { publishedWorkflow, type PublicationDeps } from '#workflows/publication-service.ts';
import { startCallbackExecution } from './callback-delivery.ts';
import { callbackUrlProblem } from './callback-url.ts';
import type { UserStateRepository, Turn } from './user-state-repository.ts';
import { SETTLED_STATUSES, STOPPABLE_STATUSES, type ExecutionRecord } from './execution-model.ts';
import type { ExecutionsRepository } from './executions-repository.ts';
import type { ContextStore } from './context-store.ts';
import { initialCursor, type ApprovalDecision } from './step-state.ts';
import { executionArnOf } from '#shared/execution-arn.ts';
import { startRefused, type StateMachine, type StateMachineInput } from './state-machine-gateway.ts';
import type { ExecuteRequest } from './execute-request.ts';
import type { Caller } from '#shared/access.ts';
import { logger } from '#shared/lambda/powertools.ts';
import { isConditionFailure } from '#shared/store/conditional-write.ts';
import { endLogAsRecorded, streamEventAppender } from './stream-event-log.ts';
import type { StreamEventsRepository } from './stream-events-repository.ts';
import { settledEvents, startEvent } from './stream-events.ts';
import { pollPauses, type SettleTimes } from './settle-polling.ts';

/** Waiting for, stopping and resuming executions. */
export interface ExecutionDeps {
  executions: ExecutionsRepository;
  stateMachine: StateMachine;
  stateMachineArn: string;
  /** The execution's event log: a stop or a failed approval ends it. */
  events: StreamEventsRepository;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
  /** How long this instance saw recent runs take, per workflow: times the first status read (without it, fixed pauses). */
  settleTimes?: SettleTimes;
}

/** Starting one also reads the publication, writes initial memory and the execution context. */
export interface StartDeps extends ExecutionDeps, PublicationDeps {
  userState: UserStateRepository;
  contexts: ContextStore;
  allowLoopbackCallbacks: boolean;
}

/**
 * An execution named before it exists (an Idempotency-Key's reservation names it first), and what the start owes whoever
 * may have to finish it: the same ids, thread and creation time make the same items, so a start driven again after its
 * first attempt died writes exactly what that attempt wrote, or would have.
 */
export interface PlannedRun {
  executionId: string;
  threadId: string;
  createdAtMs: number;
  /**
   * The items may exist already, written by an attempt that died before the state machine started (so nothing has
   * read or changed them): the record found `queued` is kept, the others are written again as they were.
   */
  again?: boolean;
  /**
   * Called just before the execution's items are written, after the publication is read: a throw stops the start with
   * nothing of this attempt written, and is the start's error (an Idempotency-Key's holder whose lease ran out on the way).
   */
  writing?: () => void;
  /** Every item is written: called with the state machine input before the start is sent. A throw stops the start (503). */
  launching?: (input: StateMachineInput) => Promise<void>;
  /**
   * The start failed (or `launching` threw): answers whether the execution's items may be taken back (the record marked
   * failed, the message out of its thread). False leaves them as they are, for a retry that drives the same start.
   * `mayHaveStarted`: StartExecution was sent and its failure does not prove that nothing started (a timeout, a 5xx, a
   * lost connection: the request may have gone through and only its answer been lost).
   */
  unstarted?: (mayHaveStarted: boolean) => Promise<boolean>;
}

export async function startExecution(
  deps: StartDeps,
  caller: Caller,
  workflowId: string,
  request: ExecuteRequest,
  planned?: PlannedRun,
): Promise<ExecutionRecord> {
  const workflow = await publishedWorkflow(deps, caller.projectId, workflowId);
  applyOverrides(workflow.definition, request.overrides, deps.now());
  if (request.callback_url !== undefined) {
    const problem = callbackUrlProblem(request.callback_url, deps.allowLoopbackCallbacks);
    if (problem) throw new ValidationError([{ field: 'callback_url', message: problem }]);
  }
  const executionId = planned?.executionId ?? randomUUID();
  const now = planned?.createdAtMs ?? deps.now();
  const expiresAtMs = now + EXECUTION_RETENTION_MS;
  const ids = {
    execution_id: executionId,
    project_id: caller.projectId,
    publication_id: workflow.publication_id,
    workflow_id: workflowId,
    user_id: request.user_id,
    thread_id: planned?.threadId ?? request.thread_id ?? randomUUID(),
  };
  const record: ExecutionRecord = {
    ...ids,
    status: 'queued',
    output: null,
    error: null,
    total_steps: 0,
    created_at: new Date(now).toISOString(),
    finished_at: null,
    pending_approval: null,
    task_token: null,
    callback_url: request.callback_url ?? null,
    webhook_secret: request.webhook_secret ?? null,
    callback_state: request.callback_url ? 'pending' : 'none',
  };

  // Nothing reads these items before the state machine starts, so they are written side by side: the execution's steps
  // read the context, the memory and the record, and the log starts with the execution (a stream or subscription follows
  // it from its first moment; the log is new, so its first batch is written at id 1 without reading where it ends).
  // The user's message joins its thread's history here, the first of the execution's turns, so the execution's first step has
  // one round trip less before its first node; the step's history read leaves out its own run's turns.
  const message = request.input.message;
  const userTurn: Turn | undefined =
    typeof message === 'string' ? { role: 'user', text: message, execution_id: executionId, at: record.created_at } : undefined;
  planned?.writing?.();
  // Each write is attempted as its own promise: one that throws before it is sent (its item cannot be built) must not
  // stop the clean-up of those already on their way.
  const written = await Promise.allSettled([
    attempt(() => (planned?.again ? createUnlessQueued(deps, record, expiresAtMs) : deps.executions.create(record, expiresAtMs))),
    attempt(() =>
      deps.contexts.createContext(
        { ...ids, input: request.input, overrides: request.overrides, created_at: record.created_at },
        expiresAtMs,
      ),
    ),
    attempt(() => deps.events.putBatch(executionId, 1, [startEvent(record)], { final: false, projectId: caller.projectId, expiresAtMs })),
    attempt(() =>
      request.initial_memory && Object.keys(request.initial_memory).length > 0
        ? deps.userState.writeMemory(caller.projectId, request.user_id, request.initial_memory)
        : undefined,
    ),
    attempt(() =>
      userTurn
        ? deps.userState.appendTurn(caller.projectId, request.user_id, ids.thread_id, userTurn, 1, now + HISTORY_RETENTION_MS)
        : undefined,
    ),
  ]);
  const [recordWrite, , , , turnWrite] = written;
  const recordWritten = recordWrite.status === 'fulfilled';
  const turnWritten = userTurn !== undefined && turnWrite.status === 'fulfilled';
  let sent = false;
  try {
    const failed = written.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    // Ids and a cursor only: the input is in the execution item (Step Functions states stop at 256 KiB), and the
    // signing secret stays in the table (state machine inputs are visible in the execution history).
    const input: StateMachineInput = {
      mode: 'run',
      execution_id: executionId,
      cursor: initialCursor(workflow.definition, userTurn ? 1 : 0),
    };
    await planned?.launching?.(input);
    sent = true;
    await deps.stateMachine.start(executionId, input);
  } catch (error) {
    // The caller gets a 503 without the execution id, so nobody can poll this record; marking it failed keeps
    // listings and the operator's view honest. The message leaves its thread again: a retry of the 503 sends it
    // anew. Neither clean-up may turn the 503 into a 500. A start someone else may still finish keeps its items.
    if (planned?.unstarted && !(await planned.unstarted(sent && !startRefused(error)))) throw unavailable(error);
    // The mark only takes a record still queued. A start whose answer was lost may have gone through: if its first
    // step took the record first, the execution goes on (the mark fails, the record tells the truth) and keeps its message;
    // if the mark came first, that step finds the execution ended and goes no further.
    const marked = recordWritten ? await markUnstarted(deps, executionId) : undefined;
    if (turnWritten && marked !== false) await removeUnstartedTurn(deps, caller.projectId, request.user_id, ids.thread_id, userTurn);
    throw unavailable(error);
  }
  return record;
}

/** The record of a start driven again: one its first attempt wrote is `queued` (nothing ran), and stays as it is. */
async function createUnlessQueued(deps: StartDeps, record: ExecutionRecord, expiresAtMs: number): Promise<void> {
  try {
    await deps.executions.create(record, expiresAtMs);
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const existing = await deps.executions.get(record.execution_id, true);
    if (existing?.status !== 'queued')
      throw new Error(`Execution ${record.execution_id} is ${existing?.status ?? 'gone'}, not queued: its start cannot be driven again`, {
        cause: error,
      });
  }
}

/** A write whose synchronous failure (building its item) becomes a rejection like any other. */
const attempt = async <T>(write: () => Promise<T> | undefined): Promise<T | undefined> => write();

async function removeUnstartedTurn(deps: StartDeps, projectId: string, userId: string, threadId: string, turn: Turn): Promise<void> {
  await deps.userState
    .removeTurn(projectId, userId, threadId, turn, 1)
    .catch((removeError: unknown) =>
      logger.error('could not remove the user turn of an unstarted run', { executionId: turn.execution_id, error: removeError as Error }),
    );
}

/** True: marked failed. False: no longer queued (its first step has taken it, so it started). Undefined: the write failed. */
async function markUnstarted(deps: ExecutionDeps, executionId: string): Promise<boolean | undefined> {
  return deps.executions
    .transition(executionId, ['queued'], {
      status: 'failed',
      error: 'The execution service was unavailable',
      finished_at: new Date(deps.now()).toISOString(),
      callback_state: 'none',
    })
    .then(
      (previous) => {
        if (!previous) logger.warn('an execution whose start failed without a clear answer has started: it goes on', { executionId });
        return previous !== undefined;
      },
      (markError: unknown) => {
        logger.error('could not mark an unstarted run failed', { executionId, error: markError as Error });
        return undefined;
      },
    );
}

/**
 * Polls the record until the execution settles (completed, failed, interrupted, cancelled), the deadline passes,
 * or `stop` aborts (the caller went away: the execution goes on, nobody is left to tell). An execution just started cannot
 * have settled: the first read comes when recent runs of the workflow settled (see settle-polling.ts), so a quick
 * run is answered in one or two strongly consistent reads, and the pauses grow to a read a second for a long one.
 */
export async function waitUntilSettled(
  deps: ExecutionDeps,
  run: Pick<ExecutionRecord, 'execution_id' | 'project_id' | 'workflow_id'>,
  deadlineMs: number,
  stop?: AbortSignal,
): Promise<ExecutionRecord> {
  const executionId = run.execution_id;
  const since = deps.now();
  const timing = deps.settleTimes?.waitFor(`${run.project_id}/${run.workflow_id}`);
  const nextPause = pollPauses(timing?.expectedMs);
  let pause = nextPause();
  let goingAt = since;
  for (;;) {
    await deps.sleep(Math.max(0, Math.min(pause, deadlineMs - deps.now())));
    const readAt = deps.now();
    const record = await deps.executions.get(executionId, true);
    if (!record) throw new NotFoundError(`Execution ${executionId} not found`);
    if (SETTLED_STATUSES.includes(record.status)) {
      const settledAt = settledBetween(record, goingAt, readAt, deps.now());
      if (settledAt !== undefined) timing?.settled(settledAt - since);
      return record;
    }
    goingAt = readAt;
    pause = nextPause();
    if (deps.now() + pause >= deadlineMs || stop?.aborted) return record;
  }
}

/**
 * When the settled record could first be read: its `finished_at` (the step function's clock, stamped before its
 * write is sent) plus about a round trip (what this read took), kept between the last read that found the execution
 * going and now. An interrupted run has no such time: it is not used to time later waits.
 */
function settledBetween(record: ExecutionRecord, goingAt: number, readAt: number, now: number): number | undefined {
  const finishedAt = record.finished_at === null ? Number.NaN : Date.parse(record.finished_at);
  return Number.isNaN(finishedAt) ? undefined : Math.min(now, Math.max(goingAt, finishedAt + (now - readAt)));
}

/** Another project's execution is answered exactly like a missing one. */
export async function ownedExecution(
  deps: Pick<ExecutionDeps, 'executions'>,
  caller: Caller,
  executionId: string,
  consistent = false,
): Promise<ExecutionRecord> {
  const record = await deps.executions.get(executionId, consistent);
  if (!record || record.project_id !== caller.projectId) throw new NotFoundError(`Execution ${executionId} not found`);
  return record;
}

export async function stopExecution(deps: ExecutionDeps, caller: Caller, executionId: string) {
  const record = await ownedExecution(deps, caller, executionId, true);
  const refuse = (status: string) =>
    new ConflictError(`Execution ${executionId} is ${status}; only queued or running executions can be stopped`);
  const log = streamEventAppender(deps.events, executionId, { now: deps.now });
  const refuseAsRecorded = async (finished: ExecutionRecord) => {
    // A stop that wrote the record but not the log (it failed half-way) is retried as a 409: the log still ends.
    await endLogAsRecorded(log, finished);
    return refuse(finished.status);
  };
  if (!STOPPABLE_STATUSES.includes(record.status)) throw await refuseAsRecorded(record);
  const cancelled = {
    status: 'cancelled' as const,
    finished_at: new Date(deps.now()).toISOString(),
    pending_approval: null,
    task_token: null,
  };
  const previous = await deps.executions.transition(executionId, STOPPABLE_STATUSES, cancelled);
  if (!previous) throw await refuseAsRecorded(await ownedExecution(deps, caller, executionId, true));
  await log.append(settledEvents({ ...previous, ...cancelled, output: null, error: null }));
  try {
    await deps.stateMachine.stop(executionArnOf(deps.stateMachineArn, executionId), 'Stopped through the API');
  } catch (error) {
    // The record already says cancelled, and an execution that is not running ends at its next step (a waiting approval
    // at its timeout), so a stop that did not reach Step Functions (not started yet, throttled) changes nothing the
    // caller sees; failing here would lose the callback, as a retried stop answers 409.
    if ((error as Error).name !== 'ExecutionDoesNotExist')
      logger.warn('stop not sent to Step Functions', { executionId, error: error as Error });
  }
  if (previous.callback_url) await startCallbackExecution(deps.stateMachine, executionId);
  return { execution_id: executionId, status: 'cancelled' as const };
}

/** Step Functions' answers for a task token that can never be answered again, and the execution's error for each. */
const TOKEN_GONE = new Map([
  ['TaskTimedOut', 'The approval was not answered in time'],
  ['TaskDoesNotExist', 'The approval could not be delivered: the execution was no longer waiting for it'],
  ['InvalidToken', 'The approval could not be delivered: its task token is invalid'],
]);

/**
 * Approve or reject the pending step. The approval is claimed in the table first, under a lease
 * (`approval_lease_until`), so two decisions cannot both be sent; the claim keeps the approval and its task token,
 * so whatever happens after it there is a way back:
 * - sent: the claim is cleared and the execution goes on (a failed clear is harmless: the next claim finds the token gone);
 * - not sent, the token may still be good (throttled, unavailable): the approval is given back (503, retry);
 * - not sent, the token is gone (timed out, task no longer exists, invalid): the execution fails with its callback (409);
 * - the invocation died, or the give-back failed: once the lease has passed, the next decision takes the claim over
 *   and sends again. Step Functions accepts one answer per token, so exactly one decision applies; a taken-over
 *   claim that finds the token gone cannot tell whether the first send landed, so it leaves the execution to its own path.
 */
export async function decideApproval(
  deps: ExecutionDeps,
  caller: Caller,
  executionId: string,
  decision: ApprovalDecision['decision'],
  feedback: string,
) {
  const record = await afterLiveClaim(deps, caller, await ownedExecution(deps, caller, executionId, true));
  const { pending_approval: pending, task_token: token } = record;
  const heldUntil = claimHeldUntil(record);
  if (!pending || !token || (record.status !== 'interrupted' && heldUntil === null)) {
    throw new ConflictError(`Execution ${executionId} is not waiting for an approval (status ${record.status})`);
  }
  const now = deps.now();
  if (heldUntil !== null && heldUntil > now) {
    // Another decision is being sent: it lands (this one then answers 409) or gives the approval back, or it died and
    // its claim must pass before anyone can send. Only a retry after the lease is sure to find one of those.
    throw new ServiceUnavailableError(`Approval ${pending.approval_id} is being decided; retry later`, heldUntil - now);
  }
  const lease = now + APPROVAL_DECISION_LEASE_MS;
  const ours = { ':approval': pending.approval_id, ':token': token };
  const claimed =
    heldUntil === null
      ? await deps.executions.transition(
          executionId,
          ['interrupted'],
          { status: 'running', approval_lease_until: lease },
          {
            expression: 'pending_approval.approval_id = :approval AND task_token = :token',
            values: ours,
          },
        )
      : await deps.executions.transition(
          executionId,
          ['running'],
          { approval_lease_until: lease },
          {
            expression: 'pending_approval.approval_id = :approval AND task_token = :token AND approval_lease_until = :held',
            values: { ...ours, ':held': heldUntil },
          },
        );
  if (!claimed) throw new ConflictError(`Approval ${pending.approval_id} is no longer pending`);
  // Every later write names this claim, so none of them touches an execution a stop, a take-over or the next approval changed.
  const whileClaimed = {
    expression: 'pending_approval.approval_id = :approval AND task_token = :token AND approval_lease_until = :lease',
    values: { ...ours, ':lease': lease },
  };
  const release = (changes: Partial<ExecutionRecord>, what: string) =>
    deps.executions
      .transition(executionId, ['running'], { approval_lease_until: null, ...changes }, whileClaimed)
      .catch((error: unknown) => {
        logger.warn(`approval claim not ${what}; it passes with its lease`, { executionId, error: error as Error });
        return undefined;
      });
  try {
    await deps.stateMachine.resume(token, { decision, feedback, approval_id: pending.approval_id } satisfies ApprovalDecision);
  } catch (error) {
    const name = (error as Error).name;
    const gone = TOKEN_GONE.get(name);
    if (gone && heldUntil !== null) {
      await release({ pending_approval: null, task_token: null }, 'cleared');
      throw new ConflictError(`Approval ${pending.approval_id} is no longer pending`);
    }
    if (name === 'TaskDoesNotExist' && record.dead_task_token !== token) {
      // A task whose attempt failed (its function crashed after recording the wait) is retried with a new token, which
      // its next attempt records within seconds: the approval goes back, marked, and the retry sends with the new
      // token. Found dead a second time, the token was not replaced: the execution ends below.
      await release({ status: 'interrupted', dead_task_token: token }, 'given back');
      throw unavailable(error, APPROVAL_REISSUE_WAIT_MS);
    }
    if (gone) {
      // Nobody can ever answer this approval: the execution ends failed now, with its callback, instead of staying running.
      const finishedAt = new Date(deps.now()).toISOString();
      const failed = await deps.executions.transition(
        executionId,
        ['running'],
        { status: 'failed', error: gone, finished_at: finishedAt, pending_approval: null, task_token: null, approval_lease_until: null },
        whileClaimed,
      );
      if (failed)
        await streamEventAppender(deps.events, executionId, { now: deps.now }).append(
          settledEvents({ ...failed, status: 'failed', error: gone, output: null, pending_approval: null }),
        );
      if (failed?.callback_url) await startCallbackExecution(deps.stateMachine, executionId);
      throw new ConflictError(`Approval ${pending.approval_id} can no longer be answered (${name}); the execution has failed`);
    }
    // The token may still be good (throttled, service unavailable): give the approval back so the caller can retry.
    const givenBack = await release({ status: 'interrupted' }, 'given back');
    throw unavailable(error, givenBack ? undefined : lease - deps.now());
  }
  await release({ pending_approval: null, task_token: null }, 'cleared');
  return { execution_id: executionId, approval_id: pending.approval_id, decision, status: 'running' as const };
}

/** When a decision's claim on the approval passes; null while none holds it (a claim only ever leaves an execution `running`). */
function claimHeldUntil(record: ExecutionRecord): number | null {
  return record.status === 'running' ? (record.approval_lease_until ?? null) : null;
}

/**
 * A decision that finds another one's claim live waits a moment for it (its send takes a round trip), so that the
 * usual race of two decisions answers the loser 409 as the API promises, not 503; a claim still held after
 * APPROVAL_CLAIM_WAIT_MS (a throttled send, a holder that died) is left to the 503 and its Retry-After.
 */
async function afterLiveClaim(deps: ExecutionDeps, caller: Caller, record: ExecutionRecord): Promise<ExecutionRecord> {
  let current = record;
  for (let waited = 0, pause = 25; waited < APPROVAL_CLAIM_WAIT_MS; waited += pause, pause = Math.min(pause * 2, 400)) {
    const heldUntil = claimHeldUntil(current);
    if (heldUntil === null || heldUntil <= deps.now() || !current.task_token) return current;
    await deps.sleep(pause);
    current = await ownedExecution(deps, caller, current.execution_id, true);
  }
  return current;
}

/**
 * A 503 whose body says only what the caller can do: the service's error (its name and message) stays in the
 * log through `cause`, never in a response body.
 */
function unavailable(cause: unknown, retryAfterMs?: number): ServiceUnavailableError {
  const error = new ServiceUnavailableError('The execution service is unavailable; retry later', retryAfterMs);
  error.cause = cause;
  return error;
}
