import { sfn } from '#shared/clients/sfn.ts';
import { requireEnv } from '#shared/config.ts';
import { logger, metrics, MetricUnit } from '#shared/powertools.ts';
import { STATE_MACHINE_ENV } from '#shared/resources.ts';
import { taskHandler } from '#shared/task-handler.ts';
import * as z from '#shared/zod.ts';
import { ENDED_STATUSES, reconcileEndedExecution, type EndedStatus, type ReconcilerDeps } from '#engine/execution-reconciler.ts';
import { createStateMachine } from '#executions/state-machine-gateway.ts';
import { executionStatusFromEnv } from '#executions/wiring.ts';

const stateMachineArn = requireEnv(STATE_MACHINE_ENV);
// Status and error writes only (the error text is bounded far below the inline limit): no bucket needed.
const deps: ReconcilerDeps = { executions: executionStatusFromEnv(), stateMachine: createStateMachine(sfn, stateMachineArn), now: Date.now };

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
 * The execution-ended reconciler (task table trigger `executionEnded`): invoked by the EventBridge rule for
 * this state machine's executions that end FAILED, TIMED_OUT or ABORTED. See execution-reconciler.ts.
 */
export const handler = taskHandler(statusChangeSchema, async ({ detail }) => {
  if (detail.stateMachineArn !== stateMachineArn || !(ENDED_STATUSES as readonly string[]).includes(detail.status)) {
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
    logger.warn('execution ended outside its own path', { executionArn: detail.executionArn, status: detail.status, error: detail.error, ...reconciled });
    metrics.addMetric('ExecutionsReconciled', MetricUnit.Count, 1);
  }
  return reconciled;
});
