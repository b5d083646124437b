import { failureBound } from './fault-tally.ts';
import type { InvariantInput, Violate } from './invariants.ts';
import { AWS_ERROR_NAME, TERMINAL } from './outcomes.ts';
import type { Decision, StartedRun } from './traffic-record.ts';

const APPLIED_BY_OUTPUT: [string, Decision][] = [
  ['approved', 'approve'],
  ['rejected', 'reject'],
];
const DECISION_EVENT: Record<Decision, string> = { approve: 'approved', reject: 'rejected' };

/** Both of the gate's edges end the execution completed: its output says which decision applied. */
function appliedDecision(output: unknown): Decision | undefined {
  if (typeof output !== 'string') return undefined;
  return APPLIED_BY_OUTPUT.find(([prefix]) => output.startsWith(prefix))?.[1];
}

const answered200 = (run: StartedRun) => run.decisions.filter((decision) => decision.status === 200);

/**
 * The workflow API's executions: each ends (or waits at an approval nobody decided), fails no more often than the faults
 * can account for, ends cancelled only when stopped; a decision applies once and is never overtaken by a stop; a stop is
 * answered as the API promises; one Idempotency-Key is one execution.
 */
export function checkExecutions({ record, stored, finals, faults }: InvariantInput, violate: Violate): void {
  const failed: string[] = [];
  for (const run of record.runs.values()) {
    const final = finals.get(run.executionId);
    const status = final?.status ?? 'unknown';
    const decided = answered200(run);
    const waiting = status === 'interrupted' && run.workflow === 'gate' && decided.length === 0;
    if (!TERMINAL.has(status) && !waiting) violate('run-ends', `${run.executionId} (${run.workflow}) still ${status}`);
    if (status === 'cancelled' && !run.stops.some((stop) => stop.status !== 409))
      violate('run-ends', `${run.executionId} (${run.workflow}) cancelled, though no stop was sent or every stop was refused`);
    if (status === 'failed') {
      failed.push(`${run.executionId} (${run.workflow}): ${String(final?.error)}`);
      if (AWS_ERROR_NAME.test(String(final?.error)))
        violate('run-ends', `${run.executionId}: its error names an AWS error: ${String(final?.error)}`);
    }

    const kinds = new Set(decided.map((decision) => decision.decision));
    if (kinds.size > 1) violate('decision-once', `${run.executionId}: both approve and reject were answered 200`);
    if (run.workflow === 'gate' && status === 'completed') {
      const applied = appliedDecision(final?.output);
      const expected = decided[0]?.decision;
      if (expected ? applied !== expected : !run.decisions.some((decision) => decision.decision === applied))
        violate(
          'decision-once',
          `${run.executionId}: ${expected ? `${expected} answered 200` : `sent ${run.decisions.map((one) => one.decision).join(', ') || 'no decision'}`}, ended with output ${JSON.stringify(final?.output)}`,
        );
    }
    if (decided.length > 0 && status === 'cancelled') {
      const decision = decided[0]!.decision;
      const events = run.lifecycle ?? [];
      const finalAt = events.findIndex((event) => event.event === 'status' && (event.data as { status: string }).status === 'cancelled');
      const decisionAt = events.findIndex(
        (event) => event.event === 'decision' && (event.data as { decision: string }).decision === DECISION_EVENT[decision],
      );
      if (decisionAt === -1 || (finalAt !== -1 && decisionAt > finalAt))
        violate('decision-not-overtaken', `${run.executionId}: ${decision} answered 200, then cancelled without its decision event`);
    }
    checkStops(run, status, record.streams.find((stream) => stream.executionId === run.executionId)?.completeStatus, violate);
  }
  const bound = failureBound(faults);
  const allowed = Object.values(bound).reduce((sum, entry) => sum + entry.failures, 0);
  if (failed.length > allowed)
    violate(
      'run-ends',
      `${failed.length} executions failed, the faults account for ${allowed} (${JSON.stringify(bound)}): ${failed.slice(0, 5).join('; ')}`,
    );

  // A first attempt whose start was refused leaves a record (marked failed, or still queued when a fault stopped that too)
  // that no state machine ever ran and no answer named; it is no second execution.
  for (const [key, executionIds] of record.keyAnswers) {
    if (executionIds.size !== 1) violate('one-run-per-key', `${key}: answered with ${[...executionIds].join(', ')}`);
    const started = (stored.executions.get(`chaos-${key}`) ?? []).filter((run) => stored.stateMachineExecutions.has(run.execution_id));
    if (started.length !== 1)
      violate(
        'one-run-per-key',
        `${key}: ${started.length} started executions stored (${started.map((run) => `${run.execution_id} ${run.status}`).join(', ')})`,
      );
  }
}

/** What each stop was answered must be what happened to the execution. */
function checkStops(run: StartedRun, status: string, streamedStatus: string | undefined, violate: Violate): void {
  for (const stop of run.stops) {
    if (stop.status === 200 && status !== 'cancelled')
      violate('stop-honoured', `${run.executionId}: a stop (${stop.purpose}) answered 200, the execution ended ${status}`);
    if (stop.purpose === 'approval' && stop.status === 200)
      violate('stop-honoured', `${run.executionId}: stopped while it waited at its approval, which answers 409`);
    if (stop.purpose === 'ended' && (stop.status === 200 || status !== 'completed'))
      violate('stop-honoured', `${run.executionId}: a stop after its end answered ${stop.status}, and it is ${status}`);
    if (stop.purpose === 'streaming' && stop.status === 200 && streamedStatus !== undefined && streamedStatus !== 'cancelled')
      violate('stop-honoured', `${run.executionId}: stopped while streaming, and its stream completed ${streamedStatus}`);
  }
}
