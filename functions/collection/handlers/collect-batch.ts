import { metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';
import { collectUntil } from '#collection/collection-service.ts';
import { collectionFromEnv } from '#collection/wiring.ts';
import { COLLECTION_EVENT_MAX_MS } from '#shared/limits.ts';

const deps = collectionFromEnv();

const id = z.string().check(z.minLength(1));
/**
 * A sweep's executions keep the state machine definition they started with: one started before a deploy that
 * renamed its input field names the sweep `run_id`, and loops on that name until it ends, so it is answered in kind.
 */
const batchSchema = z.union([z.object({ task_id: id, sweep_id: id }), z.object({ task_id: id, run_id: id })]);

/** CollectBatch task: as much of the sweep as fits in this invocation; the state machine loops until `done`. */
export const handler = withTaskStack(batchSchema, async (input, context) => {
  const { task_id } = input;
  const sweep_id = 'sweep_id' in input ? input.sweep_id : input.run_id;
  // No event starts later than its longest possible collection before the timeout: the batch always saves its checkpoint.
  const deadlineMs = deps.now() + context.getRemainingTimeInMillis() - COLLECTION_EVENT_MAX_MS;
  const { done, summary } = await collectUntil(deps, task_id, sweep_id, deadlineMs);
  if (done) {
    metrics.addMetric('ConversationsHandedOff', MetricUnit.Count, summary.handed_off);
    metrics.addMetric('CollectionFailures', MetricUnit.Count, summary.failed);
  }
  return 'sweep_id' in input ? { task_id, sweep_id, done } : { task_id, run_id: sweep_id, done };
});
