import { meterSubject, recordCost } from '#shared/metering/cost-meter.ts';
import { CALLBACK_ATTEMPT_TIMEOUT_MS } from '#shared/limits.ts';
import { callbackUrlProblem, resolvedAddressProblem } from './callback-url.ts';
import { FINISHED_STATUSES, executionView, type ExecutionStatus } from './execution-model.ts';
import type { ExecutionsRepository } from './executions-repository.ts';
import type { StateMachine } from './state-machine-gateway.ts';
import { webhookHeaders } from './callback-signature.ts';
import { epochSeconds } from '#shared/time.ts';

export interface CallbackDeps {
  executions: ExecutionsRepository;
  allowLoopbackCallbacks: boolean;
  now: () => number;
  fetch: typeof fetch;
}

/**
 * The callback execution of an execution whose own execution cannot deliver it (stopped, or ended outside the state
 * machine's path): a `callback` mode execution with this name, so a repeated start is a no-op.
 */
export const CALLBACK_EXECUTION_PREFIX = 'callback-';

export async function startCallbackExecution(stateMachine: Pick<StateMachine, 'start'>, executionId: string): Promise<void> {
  await stateMachine.start(`${CALLBACK_EXECUTION_PREFIX}${executionId}`, { mode: 'callback', execution_id: executionId });
}

/** A receiver that did not take the callback; the state machine retries these with backoff. */
export class CallbackDeliveryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CallbackDeliveryError';
  }
}

/**
 * Posts the status response of a finished execution to its callback URL. The webhook id is the same on
 * every attempt, so receivers can drop repeats; a URL that became unsafe is given up at once, not retried.
 */
export async function deliverCallback(deps: CallbackDeps, executionId: string): Promise<{ delivered: boolean; reason?: string }> {
  const record = await deps.executions.get(executionId, true);
  if (record) meterSubject({ project: record.project_id });
  // The DeliverCallback state itself, one transition per attempt.
  recordCost({ stateTransitions: 1 });
  if (!record?.callback_url) return { delivered: false, reason: 'no callback' };
  if (record.callback_state === 'delivered') return { delivered: true };
  const problem =
    callbackUrlProblem(record.callback_url, deps.allowLoopbackCallbacks) ??
    (await resolvedAddressProblem(record.callback_url, deps.allowLoopbackCallbacks));
  if (problem) {
    await abandonPendingCallback(deps.executions, executionId);
    return { delivered: false, reason: `callback_url ${problem}` };
  }
  recordCost({ callbackDeliveries: 1 });
  const body = JSON.stringify(executionView(record, deps.now()));
  const headers = webhookHeaders(record.webhook_secret, `msg_${executionId}`, epochSeconds(deps.now()), body);
  let status: number;
  try {
    const response = await deps.fetch(record.callback_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'workflow-ingest-callback/1', ...headers },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(CALLBACK_ATTEMPT_TIMEOUT_MS),
    });
    status = response.status;
    await response.body?.cancel();
  } catch (error) {
    throw new CallbackDeliveryError(`Callback request failed: ${(error as Error).message}`);
  }
  if (status < 200 || status >= 300) throw new CallbackDeliveryError(`Callback receiver answered ${status}`);
  await deps.executions.setCallbackState(executionId, 'delivered');
  return { delivered: true };
}

/**
 * A callback given up for good; only one still pending, so a delivery that did happen is never overwritten. Answers whether it was pending.
 */
export async function abandonPendingCallback(
  executions: ExecutionsRepository,
  executionId: string,
  from: readonly ExecutionStatus[] = FINISHED_STATUSES,
): Promise<boolean> {
  const previous = await executions.transition(
    executionId,
    from,
    { callback_state: 'abandoned' },
    {
      expression: 'callback_state = :pending',
      values: { ':pending': 'pending' },
    },
  );
  return previous !== undefined;
}
