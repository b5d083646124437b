import { metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';
import { recordApprovalWait } from '#engine/approval-wait.ts';
import { approvalWaitFromEnv } from '#engine/wiring.ts';

const deps = approvalWaitFromEnv();

const awaitApprovalSchema = z.object({
  execution_id: z.string().check(z.minLength(1)),
  approval: z.looseObject({ approval_id: z.string().check(z.minLength(1)), node_id: z.string() }),
  task_token: z.string().check(z.minLength(1)),
});

/** AwaitApproval task (`lambda:invoke.waitForTaskToken`); see approval-wait.ts. */
export const handler = withTaskStack(awaitApprovalSchema, async (wait) => {
  const recorded = await recordApprovalWait(deps, wait);
  metrics.addMetric('ApprovalsAwaited', MetricUnit.Count, 1);
  return recorded;
});
