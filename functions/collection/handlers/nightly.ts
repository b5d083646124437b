import { logger, metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';
import { nightlyRunId } from '#collection/collection-runs.ts';
import { nightlyFromEnv } from '#collection/wiring.ts';

const deps = nightlyFromEnv();

/** The 04:00 schedule sends this; the 00:00 schedule's input is whatever the scheduler sends, and nothing in it is read. */
const deadlineCheck = z.object({ check: z.literal('deadline') });

/**
 * The nightly trigger (EventBridge Scheduler, 00:00 Europe/Moscow): starts one run per periodic task. One-off tasks
 * run only when the operator starts them. At 04:00 the same function counts tonight's runs that have not finished
 * (`NightlyRunsLate`, which an alarm watches): the night's date, hence the run id, is the same at both hours.
 */
export const handler = withTaskStack(z.unknown(), async (input) => {
  const runId = nightlyRunId(deps.now());
  const tasks = (await deps.tasks.listTasks()).filter((task) => task.kind === 'periodic');
  if (deadlineCheck.safeParse(input).success) {
    const runs = await Promise.all(tasks.map((task) => deps.tasks.getRun(task.task_id, runId)));
    const late = tasks.filter((_, i) => !runs[i]?.finished_at).map((task) => task.task_id);
    metrics.addMetric('NightlyRunsLate', MetricUnit.Count, late.length);
    if (late.length > 0) logger.warn('nightly collection runs not finished by 04:00', { runId, late });
    return { run_id: runId, late };
  }
  for (const task of tasks) await deps.runs.start(task.task_id, runId);
  logger.info('nightly collection started', { runId, tasks: tasks.length });
  return { run_id: runId, started: tasks.map((task) => task.task_id) };
});
