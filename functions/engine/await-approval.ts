import { z } from 'zod';
import { taskHandler } from '../shared/task-handler.ts';
import { executionsFromEnv } from './wiring.ts';

const executions = executionsFromEnv();

const awaitApprovalSchema = z.object({
  execution_id: z.string().min(1),
  approval: z.object({ approval_id: z.string(), message: z.string(), node_id: z.string() }),
  task_token: z.string().min(1),
});

/**
 * AwaitApproval task (`lambda:invoke.waitForTaskToken`): records the pending approval and its task token
 * in one conditional write; the run then sleeps in Step Functions, costing nothing, until approve/reject
 * answers the token or the task's timeout fails the run.
 */
export const handler = taskHandler(awaitApprovalSchema, async ({ execution_id, approval, task_token }) => {
  const recorded = await executions.transition(execution_id, ['running'], {
    status: 'interrupted',
    pending_approval: approval,
    task_token,
  });
  return { recorded: Boolean(recorded) };
});
