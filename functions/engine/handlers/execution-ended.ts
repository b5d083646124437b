import { logger, metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';
import { ENDED_STATUSES, reconcileEndedExecution, type EndedStatus } from '#engine/execution-reconciler.ts';
import { reconcilerFromEnv } from '#engine/wiring.ts';

const deps = reconcilerFromEnv();

/** EventBridge's `Step Functions Execution Status Change` event; only what the reconciler reads is checked. */
const statusChangeSchema = z.looseObject({
  'detail-type': z.literal('Step Functions Execution Status Change'),
  source: z.literal('aws.states'),
  detail: z.looseObject({
    executionArn: z.string().check(z.minLength(1)),
    stateMachineArn: z.string().check(z.minLength(1)),
    name: z.string().check(z.minLength(1)),
    status: z.string(),
    error: z.nullish(z.string()),
    cause: z.nullish(z.string()),
  }),
});

/**
 * The execution-ended reconciler (task table trigger `executionEnded`): invoked by the EventBridge rule for the
 * workflow state machine's executions that end FAILED, TIMED_OUT or ABORTED. See execution-reconciler.ts.
 */
export const handler = withTaskStack(statusChangeSchema, async ({ detail }) => {
  if (detail.stateMachineArn !== deps.stateMachineArn || !(ENDED_STATUSES as readonly string[]).includes(detail.status)) {
    logger.info('status change ignored', { stateMachineArn: detail.stateMachineArn, status: detail.status });
    return { outcome: 'ignored' as const };
  }
  const reconciled = await reconcileEndedExecution(deps, {
    name: detail.name,
    status: detail.status as EndedStatus,
    error: detail.error ?? null,
    cause: detail.cause ?? null,
  });
  if (reconciled.outcome !== 'unchanged') {
    logger.warn('execution ended outside its own path', {
      executionArn: detail.executionArn,
      status: detail.status,
      error: detail.error,
      ...reconciled,
    });
    metrics.addMetric('ExecutionsReconciled', MetricUnit.Count, 1);
  }
  return reconciled;
});
