import type { Access, TableName } from './shared/resources.ts';

/**
 * The functions the workflow state machine invokes, and the ASL substitution that names each one
 * (`${StepFunctionArn}` and so on in `statemachines/workflow.asl.json`). The CDK stack creates them from
 * this table; the local Step Functions stand-in binds the same substitutions to the same handlers.
 */
export interface TaskFunction {
  readonly id: string;
  readonly handler: string;
  readonly arnSubstitution: string;
  readonly tables: Partial<Record<TableName, Access>>;
  /** Seconds; the step runs llm calls, so it may take minutes. */
  readonly timeoutSeconds: number;
  /** Whether it calls Amazon Bedrock (llm nodes with provider bedrock). */
  readonly invokesBedrock?: boolean;
}

export const taskFunctions: readonly TaskFunction[] = [
  {
    id: 'WorkflowStep',
    handler: 'engine/step.ts',
    arnSubstitution: 'StepFunctionArn',
    tables: { publications: 'read', executions: 'readWrite', conversations: 'readWrite' },
    timeoutSeconds: 900,
    invokesBedrock: true,
  },
  {
    id: 'WorkflowAwaitApproval',
    handler: 'engine/await-approval.ts',
    arnSubstitution: 'AwaitApprovalFunctionArn',
    tables: { executions: 'readWrite' },
    timeoutSeconds: 30,
  },
  {
    id: 'WorkflowDeliverCallback',
    handler: 'engine/deliver-callback.ts',
    arnSubstitution: 'DeliverCallbackFunctionArn',
    tables: { executions: 'readWrite' },
    timeoutSeconds: 60,
  },
];
