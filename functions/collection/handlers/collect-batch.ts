import { metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';
import { collectUntil } from '#collection/collection-service.ts';
import { collectionFromEnv } from '#collection/wiring.ts';
import { COLLECTION_EVENT_MAX_MS } from '#shared/limits.ts';

const deps = collectionFromEnv();

const batchSchema = z.object({ task_id: z.string().check(z.minLength(1)), run_id: z.string().check(z.minLength(1)) });

/** CollectBatch task: as much of the run as fits in this invocation; the state machine loops until `done`. */
export const handler = withTaskStack(batchSchema, async ({ task_id, run_id }, context) => {
  // No event starts later than its longest possible collection before the timeout: the batch always saves its checkpoint.
  const deadlineMs = deps.now() + context.getRemainingTimeInMillis() - COLLECTION_EVENT_MAX_MS;
  const { done, summary } = await collectUntil(deps, task_id, run_id, deadlineMs);
  if (done) {
    metrics.addMetric('ConversationsHandedOff', MetricUnit.Count, summary.handed_off);
    metrics.addMetric('CollectionFailures', MetricUnit.Count, summary.failed);
  }
  return { task_id, run_id, done };
});
