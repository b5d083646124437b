import { taskHandler } from '#shared/task-handler.ts';
import * as z from '#shared/zod.ts';
import { executionStatusFromEnv } from '#executions/wiring.ts';

/** Status and token only, never a large value: this function has no bucket. */
const executions = executionStatusFromEnv();

const awaitApprovalSchema = z.object({
  execution_id: z.string().check(z.minLength(1)),
  approval: z.looseObject({ approval_id: z.string().check(z.minLength(1)), node_id: z.string() }),
  task_token: z.string().check(z.minLength(1)),
});

/**
 * AwaitApproval task (`lambda:invoke.waitForTaskToken`): RunStep has recorded the pending approval (with its
 * message); this adds the task token and makes the run `interrupted`, in one conditional write. The run then
 * sleeps in Step Functions, costing nothing, until approve/reject answers the token or the timeout fails it.
 * A retried attempt gets a new token from Step Functions, so it may replace the token of the same approval.
 */
export const handler = taskHandler(awaitApprovalSchema, async ({ execution_id, approval, task_token }) => {
  const recorded = await executions.transition(
    execution_id,
    ['running', 'interrupted'],
    { status: 'interrupted', task_token },
    { expression: 'pending_approval.approval_id = :approval', values: { ':approval': approval.approval_id } },
  );
  return { recorded: Boolean(recorded) };
});
