import { randomUUID } from 'node:crypto';
import { NotFoundError, ServiceUnavailableError, ValidationError } from '#shared/errors.ts';
import { EXECUTION_RETENTION_MS, HISTORY_RETENTION_MS } from '#shared/limits.ts';
import { applyOverrides } from '#workflows/overrides.ts';
import { publishedWorkflow, type PublicationDeps } from '#workflows/publication-service.ts';
import { callbackUrlProblem } from './callback-url.ts';
import type { UserStateRepository, Turn } from './user-state-repository.ts';
import { SETTLED_STATUSES, type ExecutionRecord } from './execution-model.ts';
import type { ExecutionsRepository } from './executions-repository.ts';
import type { ContextStore } from './context-store.ts';
import { initialCursor } from './step-state.ts';
import { startRefused, type StateMachine, type StateMachineInput } from './state-machine-gateway.ts';
import type { ExecuteRequest } from './execute-request.ts';
import type { Caller } from '#shared/access.ts';
import { logger } from '#shared/lambda/powertools.ts';
import { isConditionFailure } from '#shared/store/conditional-write.ts';
import type { StreamEventsRepository } from './stream-events-repository.ts';
import { startEvent } from './stream-events.ts';
import { pollPauses, type SettleTimes } from './settle-polling.ts';

/** Starting and waiting for executions; stopping and deciding on them: execution-control.ts. */
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
export interface PlannedExecution {
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
  planned?: PlannedExecution,
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
  await deps.userState.removeTurn(projectId, userId, threadId, turn, 1).catch((removeError: unknown) =>
    logger.error('could not remove the user turn of an unstarted execution', {
      executionId: turn.execution_id,
      error: removeError as Error,
    }),
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
        logger.error('could not mark an unstarted execution failed', { executionId, error: markError as Error });
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
  execution: Pick<ExecutionRecord, 'execution_id' | 'project_id' | 'workflow_id'>,
  deadlineMs: number,
  stop?: AbortSignal,
): Promise<ExecutionRecord> {
  const executionId = execution.execution_id;
  const since = deps.now();
  const timing = deps.settleTimes?.waitFor(`${execution.project_id}/${execution.workflow_id}`);
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

/**
 * A 503 whose body says only what the caller can do: the service's error (its name and message) stays in the
 * log through `cause`, never in a response body.
 */
export function unavailable(cause: unknown, retryAfterMs?: number): ServiceUnavailableError {
  const error = new ServiceUnavailableError('The execution service is unavailable; retry later', retryAfterMs);
  error.cause = cause;
  return error;
}
