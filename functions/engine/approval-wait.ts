import { meterSubject } from '#shared/metering/cost-meter.ts';
import type { ExecutionsRepository } from '#executions/executions-repository.ts';
import { streamEventAppender } from '#executions/stream-event-log.ts';
import type { StreamEventsRepository } from '#executions/stream-events-repository.ts';
import { settledEvents } from '#executions/stream-events.ts';

export interface ApprovalWaitDeps {
  executions: ExecutionsRepository;
  events: StreamEventsRepository;
  now: () => number;
}

/**
 * AwaitApproval: RunStep has recorded the pending approval (with its message); this adds the task token and
 * makes the execution `interrupted`, in one conditional write. The execution then sleeps in Step Functions, costing
 * nothing, until approve/reject answers the token or the timeout fails it.
 *
 * Only then does the log get its `complete` with status `interrupted`: a client that approves on seeing it
 * always finds the approval answerable. A retried attempt gets a new token from Step Functions and replaces
 * the token of the same approval; the log already told the stream, so it says nothing twice.
 */
export async function recordApprovalWait(
  deps: ApprovalWaitDeps,
  wait: { execution_id: string; approval: { approval_id: string }; task_token: string },
): Promise<{ recorded: boolean }> {
  const previous = await deps.executions.transition(
    wait.execution_id,
    ['running', 'interrupted'],
    { status: 'interrupted', task_token: wait.task_token, approval_lease_until: null },
    { expression: 'pending_approval.approval_id = :approval', values: { ':approval': wait.approval.approval_id } },
  );
  if (previous) meterSubject({ project: previous.project_id });
  if (previous?.status === 'running') {
    // Read back whole: a long approval message is kept in S3, and the stream shows it as a poll does.
    const record = await deps.executions.get(wait.execution_id, true);
    if (record?.status === 'interrupted')
      await streamEventAppender(deps.events, wait.execution_id, { now: deps.now }).append(settledEvents(record));
  }
  return { recorded: Boolean(previous) };
}
