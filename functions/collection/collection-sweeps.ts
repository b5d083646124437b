import { randomUUID } from 'node:crypto';
import { ExecutionAlreadyExists, StartExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { collectionDate } from '#shared/collection-night.ts';
import { executionArnOf } from '#shared/execution-arn.ts';

/** Execution names are unique per state machine: one name per sweep makes every start of the same sweep the same execution. */
const EXECUTION_PREFIX = 'collect-';

/**
 * A task's sweep is an execution of the collection state machine (CollectBatch until done), named
 * `collect-<task_id>-<sweep_id>`: a repeated start of the same sweep (a retried schedule) is the same execution.
 */
export function createCollectionSweeps(client: SFNClient, stateMachineArn: string) {
  return {
    /** Answers the execution's ARN (the one started now, or the one already running the same sweep). */
    async start(taskId: string, sweepId: string): Promise<string> {
      const name = `${EXECUTION_PREFIX}${taskId}-${sweepId}`;
      try {
        await client.send(
          new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify({ task_id: taskId, sweep_id: sweepId }) }),
        );
      } catch (error) {
        if (!(error instanceof ExecutionAlreadyExists)) throw error;
      }
      return executionArnOf(stateMachineArn, name);
    },
  };
}

/**
 * The nightly sweep's id: the date the night began in the collection's zone (shared/collection-night.ts), so every
 * trigger of the same night, retries included, names the same sweep.
 */
export function nightlySweepId(nowMs: number): string {
  return `night-${collectionDate(nowMs)}`;
}

/** A sweep the operator starts now (`admin collect`): a new id each time, so it never resumes another. */
export function manualSweepId(): string {
  return `manual-${randomUUID()}`;
}
