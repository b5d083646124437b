import {
  ExecutionAlreadyExists,
  SendTaskSuccessCommand,
  StartExecutionCommand,
  StopExecutionCommand,
  type SFNClient,
} from '@aws-sdk/client-sfn';
import { executionArnOf } from '#shared/execution-arn.ts';

/**
 * The workflow state machine's input in its two modes (see `statemachines/workflow.asl.json`): ids and a
 * cursor only, a few hundred bytes whatever the run's input (Step Functions allows 256 KiB per state).
 */
export type StateMachineInput =
  | ({ mode: 'run' } & import('./step-state.ts').StepState)
  | { mode: 'callback'; execution_id: string };

/** Step Functions API calls the API handlers make; the ARN is configuration, locally the stand-in's. */
export function createStateMachine(client: SFNClient, stateMachineArn: string) {
  return {
    /** Execution names are ours (execution id, or `callback-<id>`), so a repeated start is idempotent. */
    async start(name: string, input: StateMachineInput): Promise<string> {
      try {
        const result = await client.send(new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(input) }));
        return result.executionArn!;
      } catch (error) {
        if (error instanceof ExecutionAlreadyExists) return executionArnOf(stateMachineArn, name);
        throw error;
      }
    },

    async stop(executionArn: string, cause: string): Promise<void> {
      await client.send(new StopExecutionCommand({ executionArn, error: 'Cancelled', cause }));
    },

    async resume(taskToken: string, output: unknown): Promise<void> {
      await client.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(output) }));
    },
  };
}

export type StateMachine = ReturnType<typeof createStateMachine>;
