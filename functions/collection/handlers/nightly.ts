import { logger } from '#shared/powertools.ts';
import { taskHandler } from '#shared/task-handler.ts';
import * as z from '#shared/zod.ts';
import { nightlyRunId } from '#collection/collection-runs.ts';
import { nightlyFromEnv } from '#collection/wiring.ts';

const deps = nightlyFromEnv();

/**
 * The nightly trigger (EventBridge Scheduler, 00:00 Europe/Moscow): starts one run per periodic task. One-off
 * tasks run only when the operator starts them. Its input is whatever the schedule sends; nothing in it is read.
 */
export const handler = taskHandler(z.unknown(), async () => {
  const runId = nightlyRunId(deps.now());
  const tasks = (await deps.tasks.listTasks()).filter((task) => task.kind === 'periodic');
  for (const task of tasks) await deps.runs.start(task.task_id, runId);
  logger.info('nightly collection started', { runId, tasks: tasks.length });
  return { run_id: runId, started: tasks.map((task) => task.task_id) };
});
