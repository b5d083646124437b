import { z } from 'zod';
import { optionalFlag } from '../shared/config.ts';
import { metrics, MetricUnit } from '../shared/powertools.ts';
import { taskHandler } from '../shared/task-handler.ts';
import { deliverCallback } from './callback-delivery.ts';
import { executionsFromEnv } from './wiring.ts';

const deps = { executions: executionsFromEnv(), allowLoopbackCallbacks: optionalFlag('ALLOW_LOOPBACK_CALLBACKS'), now: Date.now, fetch };

const callbackTaskSchema = z.object({ execution_id: z.string().min(1), give_up: z.boolean().optional() });

/** DeliverCallback task, and (with give_up) the record of a callback whose retries ran out. */
export const handler = taskHandler(callbackTaskSchema, async ({ execution_id, give_up }) => {
  if (give_up) {
    await deps.executions.setCallbackState(execution_id, 'abandoned');
    metrics.addMetric('CallbacksAbandoned', MetricUnit.Count, 1);
    return { delivered: false };
  }
  const result = await deliverCallback(deps, execution_id);
  if (result.delivered) metrics.addMetric('CallbacksDelivered', MetricUnit.Count, 1);
  return result;
});
