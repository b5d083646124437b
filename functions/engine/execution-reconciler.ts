import { CALLBACK_EXECUTION_PREFIX, abandonPendingCallback, startCallbackExecution } from '#executions/callback-delivery.ts';
import type { ExecutionsRepository } from '#executions/executions-repository.ts';
import type { StateMachine } from '#executions/state-machine-gateway.ts';
import { endLogAsRecorded, streamEventAppender } from '#executions/stream-event-log.ts';
import type { StreamEventsRepository } from '#executions/stream-events-repository.ts';
import { settledEvents } from '#executions/stream-events.ts';

/**
 * The execution-ended reconciler of the workflow state machine (executions and their callbacks; a collection sweep is an
 * execution of another machine and keeps its own checkpoint). An execution's own path records every ending it can see
 * (RunStep, RecordFailure, GiveUpCallback); some endings it cannot: RecordFailure's retries running out,
 * `States.DataLimitExceeded` (which `States.ALL` does not catch), an execution timeout, an abort in the console, a
 * give-up that could not be written. Step Functions reports each of them (FAILED, TIMED_OUT, ABORTED) to
 * EventBridge, and this turns the report into the record: an execution still queued, running or interrupted ends `failed`
 * and its callback starts; a callback whose delivery died is abandoned for good. Every write is conditional, so a
 * late or repeated event never overwrites an outcome (a cancelled run stays cancelled, a delivered callback stays
 * delivered).
 */
export const ENDED_STATUSES = ['FAILED', 'TIMED_OUT', 'ABORTED'] as const;
export type EndedStatus = (typeof ENDED_STATUSES)[number];

/** The Fail state the ASL enters when GiveUpCallback itself cannot record the give-up. */
export const CALLBACK_ABANDONED_ERROR = 'CallbackAbandoned';

export interface EndedExecution {
  /** The execution name: the execution id, or `callback-<id>` for a callback execution. */
  name: string;
  status: EndedStatus;
  error: string | null;
  cause: string | null;
}

export interface ReconcilerDeps {
  executions: ExecutionsRepository;
  events: StreamEventsRepository;
  stateMachine: Pick<StateMachine, 'start'>;
  now: () => number;
}

export type Reconciled =
  | { execution_id: string; outcome: 'failed'; callback_started: boolean }
  | { execution_id: string; outcome: 'callback_abandoned' | 'unchanged' };

/** Service-written causes (`States.*`) are safe and useful to show; a function's own error report stays in the logs. */
const MAX_CAUSE_CHARACTERS = 300;

export async function reconcileEndedExecution(deps: ReconcilerDeps, ended: EndedExecution): Promise<Reconciled> {
  const isCallbackExecution = ended.name.startsWith(CALLBACK_EXECUTION_PREFIX);
  const executionId = isCallbackExecution ? ended.name.slice(CALLBACK_EXECUTION_PREFIX.length) : ended.name;

  if (!isCallbackExecution && ended.error !== CALLBACK_ABANDONED_ERROR) {
    const failed = {
      status: 'failed' as const,
      error: describeEnding(ended),
      finished_at: new Date(deps.now()).toISOString(),
      pending_approval: null,
      task_token: null,
    };
    const log = streamEventAppender(deps.events, executionId, { now: deps.now });
    const previous = await deps.executions.transition(executionId, ['queued', 'running', 'interrupted'], failed);
    if (previous) {
      await log.append(settledEvents({ ...previous, ...failed, output: null }));
      if (previous.callback_url) await startCallbackExecution(deps.stateMachine, executionId);
      return { execution_id: executionId, outcome: 'failed', callback_started: Boolean(previous.callback_url) };
    }
    // The execution had ended on its own path (a stop ends as ABORTED); if that path died before its log said so, this says it.
    const record = await deps.executions.get(executionId, true);
    if (record) await endLogAsRecorded(log, record);
  }

  // The execution had finished; what died was its callback's delivery (or a callback execution). A cancelled run's
  // callback belongs to the callback execution its stop started, so only completed and failed runs are abandoned here.
  const abandoned = isCallbackExecution
    ? await abandonPendingCallback(deps.executions, executionId)
    : await abandonPendingCallback(deps.executions, executionId, ['completed', 'failed']);
  return { execution_id: executionId, outcome: abandoned ? 'callback_abandoned' : 'unchanged' };
}

function describeEnding(ended: EndedExecution): string {
  const what = { FAILED: 'failed', TIMED_OUT: 'timed out', ABORTED: 'was aborted' }[ended.status];
  let text = `The execution ${what} in Step Functions`;
  if (ended.error) text += ` (${ended.error})`;
  if (ended.error?.startsWith('States.') && ended.cause) {
    const cause = ended.cause.length > MAX_CAUSE_CHARACTERS ? `${ended.cause.slice(0, MAX_CAUSE_CHARACTERS)}…` : ended.cause;
    text += `: ${cause}`;
  }
  return text;
}
