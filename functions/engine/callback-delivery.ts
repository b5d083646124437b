import { CALLBACK_ATTEMPT_TIMEOUT_MS } from '../shared/limits.ts';
import { callbackUrlProblem, resolvedAddressProblem } from './callback-url.ts';
import { executionView } from './execution-model.ts';
import type { ExecutionsRepository } from './executions-repository.ts';
import { webhookHeaders } from './webhook-signature.ts';

export interface CallbackDeps {
  executions: ExecutionsRepository;
  allowLoopbackCallbacks: boolean;
  now: () => number;
  fetch: typeof fetch;
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
  if (!record?.callback_url) return { delivered: false, reason: 'no callback' };
  if (record.callback_state === 'delivered') return { delivered: true };
  const problem =
    callbackUrlProblem(record.callback_url, deps.allowLoopbackCallbacks) ??
    (await resolvedAddressProblem(record.callback_url, deps.allowLoopbackCallbacks));
  if (problem) {
    await deps.executions.setCallbackState(executionId, 'abandoned');
    return { delivered: false, reason: `callback_url ${problem}` };
  }
  const body = JSON.stringify(executionView(record, deps.now()));
  const headers = webhookHeaders(record.webhook_secret, `msg_${executionId}`, Math.floor(deps.now() / 1000), body);
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
