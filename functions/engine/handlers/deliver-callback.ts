import { metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';
import { abandonPendingCallback, deliverCallback } from '#executions/callback-delivery.ts';
import { callbackDeliveryFromEnv } from '#executions/wiring.ts';

const deps = callbackDeliveryFromEnv();

const callbackTaskSchema = z.object({ execution_id: z.string().check(z.minLength(1)), give_up: z.optional(z.boolean()) });

/**
 * DeliverCallback task, and (with give_up) GiveUpCallback, the record of a callback whose retries ran out.
 * If even that record cannot be written, the execution fails (CallbackAbandoned) and the execution-ended
 * reconciler writes it, so a callback never stays `pending`.
 */
export const handler = withTaskStack(callbackTaskSchema, async ({ execution_id, give_up }) => {
  if (give_up) {
    if (await abandonPendingCallback(deps.executions, execution_id)) metrics.addMetric('CallbacksAbandoned', MetricUnit.Count, 1);
    return { delivered: false };
  }
  const result = await deliverCallback(deps, execution_id);
  if (result.delivered) metrics.addMetric('CallbacksDelivered', MetricUnit.Count, 1);
  return result;
});
