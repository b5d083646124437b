import { ExecutionAlreadyExists, StartExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { executionArnOf } from '#shared/execution-arn.ts';

/** Execution names are unique per state machine: one name per run makes every start of the same run the same execution. */
const EXECUTION_PREFIX = 'collect-';

/**
 * A task's run is an execution of the collection state machine (CollectBatch until done), named
 * `collect-<task_id>-<run_id>`: a repeated start of the same run (a retried schedule) is the same execution.
 */
export function createCollectionRuns(client: SFNClient, stateMachineArn: string) {
  return {
    /** Answers the execution's ARN (the one started now, or the one already running the same run). */
    async start(taskId: string, runId: string): Promise<string> {
      const name = `${EXECUTION_PREFIX}${taskId}-${runId}`;
      try {
        await client.send(new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify({ task_id: taskId, run_id: runId }) }));
      } catch (error) {
        if (!(error instanceof ExecutionAlreadyExists)) throw error;
      }
      return executionArnOf(stateMachineArn, name);
    },
  };
}

export type CollectionRuns = ReturnType<typeof createCollectionRuns>;

/**
 * The nightly run's id: the Moscow date the night began (00:00 Europe/Moscow, UTC+3 all year), so every trigger of
 * the same night, retries included, names the same run.
 */
export function nightlyRunId(nowMs: number): string {
  const moscow = new Date(nowMs + 3 * 3_600_000);
  return `night-${moscow.toISOString().slice(0, 10)}`;
}
