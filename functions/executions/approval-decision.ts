import { createHash } from 'node:crypto';
import type { ExecutionRecord, RecordedDecision } from './execution-model.ts';
import type { ExecutionsRepository } from './executions-repository.ts';
import type { ApprovalDecision } from './step-state.ts';

/**
 * What makes two decisions the same request: the decision and the feedback as the API reads them (an absent body, `{}`
 * and `{"feedback": ""}` are one request). The approval is compared apart: it is the one the execution awaited.
 */
export function decisionFingerprint(decision: ApprovalDecision['decision'], feedback: string): string {
  return createHash('sha256')
    .update(JSON.stringify([decision, feedback]), 'utf8')
    .digest('base64url');
}

/** The decision this request repeats, once delivered; undefined when it is a decision of its own. */
export function repeatedDecision(
  record: Pick<ExecutionRecord, 'approval_decision'>,
  decision: ApprovalDecision['decision'],
  fingerprint: string,
): RecordedDecision | undefined {
  const recorded = record.approval_decision;
  const applied = recorded?.delivered === true || recorded?.resumed === true;
  return applied && recorded.decision === decision && recorded.fingerprint === fingerprint ? recorded : undefined;
}

/**
 * The step's take-up of the decision its execution resumed with, written once the decision is in the log: the approval,
 * its token and the claim's lease leave the record, and the decision is recorded as resumed. Until then the claim's lease
 * holds the execution (a stop answers 409), so a stop can never end the execution between a decision's answer and its
 * event. Only while the record still holds that approval: a step retried after it reached the next one changes nothing.
 * From `interrupted` too: a send whose answer was lost on its way back was given back, yet it landed.
 */
export async function takeUpDecision(
  executions: Pick<ExecutionsRepository, 'transition'>,
  executionId: string,
  decision: ApprovalDecision,
): Promise<boolean> {
  const resumed: RecordedDecision = {
    approval_id: decision.approval_id,
    decision: decision.decision,
    fingerprint: decisionFingerprint(decision.decision, decision.feedback),
    delivered: true,
    resumed: true,
  };
  const previous = await executions.transition(
    executionId,
    ['running', 'interrupted'],
    { status: 'running', pending_approval: null, task_token: null, approval_lease_until: null, approval_decision: resumed },
    { expression: 'pending_approval.approval_id = :approval', values: { ':approval': decision.approval_id } },
  );
  return previous !== undefined;
}
