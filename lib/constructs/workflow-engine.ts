import { Duration, Stack } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { CfnOutput } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { taskFunctions } from '../../functions/task-functions.ts';
import { STATE_MACHINE_ENV, type Access, type StateMachineAccess, type TableName } from '../../functions/shared/resources.ts';
import { STATE_MACHINE_OUTPUT } from '../stack-outputs.ts';
import type { Data } from './data.ts';
import { HandlerFunction } from './handler-function.ts';

const DEFINITION_FILE = fileURLToPath(new URL('../../statemachines/workflow.asl.json', import.meta.url));

export interface WorkflowEngineProps {
  readonly data: Data;
}

/**
 * The workflow engine: one Standard state machine from `statemachines/workflow.asl.json` (pay per state
 * transition, nothing while a run waits), and the functions its tasks invoke, from the task-function table.
 */
export class WorkflowEngine extends Construct {
  public readonly stateMachine: StateMachine;
  public readonly functions: Record<string, HandlerFunction> = {};

  constructor(scope: Construct, id: string, props: WorkflowEngineProps) {
    super(scope, id);
    for (const task of taskFunctions) {
      const fn = new HandlerFunction(this, task.id, { handler: task.handler, timeout: Duration.seconds(task.timeoutSeconds) });
      for (const [table, access] of Object.entries(task.tables) as [TableName, Access][]) props.data.bindTable(fn, table, access);
      if (task.invokesBedrock) {
        fn.addToRolePolicy(
          new PolicyStatement({
            actions: ['bedrock:InvokeModelWithResponseStream'],
            resources: [
              `arn:${Stack.of(this).partition}:bedrock:*::foundation-model/*`,
              `arn:${Stack.of(this).partition}:bedrock:*:${Stack.of(this).account}:inference-profile/*`,
            ],
          }),
        );
      }
      this.functions[task.id] = fn;
    }

    this.stateMachine = new StateMachine(this, 'WorkflowStateMachine', {
      stateMachineType: StateMachineType.STANDARD,
      // Inline rather than an S3 asset: the template then shows exactly what runs.
      definitionBody: DefinitionBody.fromString(readFileSync(DEFINITION_FILE, 'utf8')),
      definitionSubstitutions: Object.fromEntries(
        taskFunctions.map((task) => [task.arnSubstitution, this.functions[task.id]!.functionArn]),
      ),
      tracingEnabled: true,
      logs: {
        destination: new LogGroup(this, 'StateMachineLogs', { retention: RetentionDays.ONE_MONTH }),
        level: LogLevel.ERROR,
        includeExecutionData: false,
      },
    });
    for (const fn of Object.values(this.functions)) fn.grantInvoke(this.stateMachine);

    new CfnOutput(this, STATE_MACHINE_OUTPUT, { key: STATE_MACHINE_OUTPUT, value: this.stateMachine.stateMachineArn });
  }

  /** Tells a function the state machine's ARN and grants exactly the listed actions. */
  public bind(fn: LambdaFunction, access: readonly StateMachineAccess[]): void {
    fn.addEnvironment(STATE_MACHINE_ENV, this.stateMachine.stateMachineArn);
    for (const action of access) {
      if (action === 'start') this.stateMachine.grantStartExecution(fn);
      if (action === 'taskResponse') this.stateMachine.grantTaskResponse(fn);
      // Executions of this state machine only (arn:...:execution:<name>:*).
      if (action === 'stop') this.stateMachine.grantExecution(fn, 'states:StopExecution');
    }
  }
}
