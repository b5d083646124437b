import { isDeepStrictEqual } from 'node:util';
import { TAKEN_IN_THE_END } from './callback-plan.ts';
import { repeatingFaults } from './fault-tally.ts';
import type { InvariantInput, Violate } from './invariants.ts';
import { TERMINAL } from './outcomes.ts';

const DELIVER_FUNCTION = 'WorkflowDeliverCallback';
/** DeliverCallback's Retry on a receiver's refusal (States.ALL, MaxAttempts 6): seven attempts in all, then GiveUpCallback. */
const LADDER_ATTEMPTS = 7;
/** What a callback's body must agree on with the execution as GET /executions reads it once settled. */
const COMPARED = ['execution_id', 'thread_id', 'workflow_id', 'status', 'output', 'error', 'total_steps', 'created_at', 'finished_at'];

/**
 * Each finished execution with a callback is called back as its receiver allows: with `webhook-id` `msg_<id>`, signed
 * as Standard Webhooks verifies it when it has a secret, with its final state as the body; taken at least once by a
 * receiver that takes it in the end, given up (never left pending) by one that never does, never more often than the
 * ladder and the faults explain, and never followed through a redirect.
 */
export function checkCallbacks({ record, setup, stored, finals, faults }: InvariantInput, violate: Violate): void {
  const faultsInDelivery = repeatingFaults(faults, DELIVER_FUNCTION);
  let repeats = 0;
  for (const run of record.runs.values()) {
    if (!run.callback) continue;
    const { executionId } = run;
    const final = finals.get(executionId);
    const deliveries = setup.callbacks.deliveries(run.callback.tag);
    if (!final || !TERMINAL.has(final.status)) {
      if (deliveries.length > 0) violate('callback-delivered', `${executionId}: called back while ${final?.status ?? 'unknown'}`);
      continue;
    }
    for (const delivery of deliveries) {
      if (delivery.webhookId !== `msg_${executionId}`) violate('callback-delivered', `${executionId}: webhook-id ${delivery.webhookId}`);
      if (run.callback.secret && delivery.signature !== 'ok')
        violate(
          'callback-delivered',
          `${executionId}: signature ${delivery.signature} (${run.callback.secret.startsWith('whsec_') ? 'whsec_' : 'raw'} secret)`,
        );
      const problem = bodyProblem(delivery.body, final);
      if (problem) violate('callback-delivered', `${executionId}: body ${problem}`);
    }
    const taken = deliveries.filter((delivery) => delivery.outcome === 'accepted').length;
    const state = (stored.executions.get(`chaos-${run.idempotencyKey}`) ?? []).find(
      (one) => one.execution_id === executionId,
    )?.callback_state;
    if (TAKEN_IN_THE_END.has(run.callback.behaviour)) {
      if (taken === 0)
        violate(
          'callback-delivered',
          `${executionId}: finished ${final.status}, never taken by its ${run.callback.behaviour} receiver (${deliveries.length} attempts)`,
        );
      else if (state !== 'delivered') violate('callback-delivered', `${executionId}: taken, but its callback is ${state}`);
    } else if (state !== 'abandoned') {
      violate(
        'callback-delivered',
        `${executionId}: its ${run.callback.behaviour} receiver never takes it, and it is ${state} (${deliveries.length} attempts)`,
      );
    }
    repeats += Math.max(0, taken - 1);
    if (deliveries.length > LADDER_ATTEMPTS + faultsInDelivery)
      violate(
        'callback-delivered',
        `${executionId}: ${deliveries.length} attempts, more than the ladder's ${LADDER_ATTEMPTS} and ${faultsInDelivery} faults`,
      );
  }
  if (repeats > faultsInDelivery)
    violate(
      'callback-delivered',
      `${repeats} callbacks taken again after their receiver took them, with ${faultsInDelivery} faults in their delivery`,
    );
  for (const stray of setup.callbacks.strays())
    violate('callback-delivered', `a request no callback names: ${stray} (a redirect followed?)`);
}

function bodyProblem(body: string, final: Record<string, unknown>): string | undefined {
  let sent: Record<string, unknown>;
  try {
    sent = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return `not JSON: ${body.slice(0, 100)}`;
  }
  for (const field of COMPARED) {
    if (field in final && !isDeepStrictEqual(sent[field], final[field]))
      return `${field} ${JSON.stringify(sent[field])}, the execution's ${JSON.stringify(final[field])}`;
  }
  return undefined;
}
