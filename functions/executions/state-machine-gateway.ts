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
 * cursor only, a few hundred bytes whatever the execution's input (Step Functions allows 256 KiB per state).
 */
export type StateMachineInput = ({ mode: 'run' } & import('./step-state.ts').StepState) | { mode: 'callback'; execution_id: string };

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

/**
 * StartExecution's answers (its modelled errors, and throttling) that refuse the request: Step Functions started
 * nothing for it. Anything else (a timeout, a 5xx, a dropped or refused connection, an error we do not know) leaves it
 * open whether the execution started: the request may have reached Step Functions and only its answer been lost.
 */
const START_REFUSALS = new Set([
  'ValidationException',
  'InvalidArn',
  'InvalidName',
  'InvalidExecutionInput',
  'StateMachineDoesNotExist',
  'StateMachineDeleting',
  'ExecutionLimitExceeded',
  'KmsAccessDeniedException',
  'KmsInvalidStateException',
  'KmsThrottlingException',
  'ThrottlingException',
]);

/**
 * Whether a failed `start` certainly started no execution: a refusal answered to the SDK's only attempt. After retries
 * (the SDK retries timeouts, 5xx and throttling), a refusal speaks for the last attempt alone: an earlier one may have
 * timed out after its start went through.
 */
export function startRefused(error: unknown): boolean {
  if (!(error instanceof Error) || !START_REFUSALS.has(error.name)) return false;
  const attempts = (error as { $metadata?: { attempts?: number } }).$metadata?.attempts;
  return attempts === undefined || attempts <= 1;
}
