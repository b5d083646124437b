import { logger, metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';
import { nightlySweepId } from '#collection/collection-sweeps.ts';
import { nightlyFromEnv } from '#collection/wiring.ts';

const deps = nightlyFromEnv();

/** The 04:00 schedule sends this; the 00:00 schedule's input is whatever the scheduler sends, and nothing in it is read. */
const deadlineCheck = z.object({ check: z.literal('deadline') });

/**
 * The nightly trigger (EventBridge Scheduler, at the start of the night in the collection's zone, shared/collection-night.ts):
 * starts one sweep per periodic task. One-off tasks are swept only when the operator starts them. At the night's
 * deadline hour the same function counts tonight's sweeps that have not
 * finished (`NightlySweepsLate`, which an alarm watches): the night's date, hence the sweep id, is the same at both hours.
 */
export const handler = withTaskStack(z.unknown(), async (input) => {
  const sweepId = nightlySweepId(deps.now());
  const tasks = (await deps.tasks.listTasks()).filter((task) => task.kind === 'periodic');
  if (deadlineCheck.safeParse(input).success) {
    const sweeps = await Promise.all(tasks.map((task) => deps.tasks.getSweep(task.task_id, sweepId)));
    const late = tasks.filter((_, i) => !sweeps[i]?.finished_at).map((task) => task.task_id);
    metrics.addMetric('NightlySweepsLate', MetricUnit.Count, late.length);
    if (late.length > 0) logger.warn('nightly collection sweeps not finished by 04:00', { sweepId, late });
    return { sweep_id: sweepId, late };
  }
  for (const task of tasks) await deps.sweeps.start(task.task_id, sweepId);
  logger.info('nightly collection started', { sweepId, tasks: tasks.length });
  return { sweep_id: sweepId, started: tasks.map((task) => task.task_id) };
});
