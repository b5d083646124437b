import { Aws, Fn, Stack } from 'aws-cdk-lib';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  STATE_MACHINE_ACTIONS,
  STATE_MACHINE_ENVS,
  type StateMachineAccess,
  type StateMachineGrant,
  type StateMachineName,
} from '#shared/resources.ts';

/** `statemachines/<name>.asl.json`: the one definition of each state machine, deployed here and run by the twin. */
const definitionFileOf = (machine: StateMachineName) =>
  fileURLToPath(new URL(`../../../statemachines/${machine}.asl.json`, import.meta.url));

/** A construct that owns one of the product's state machines and grants access to it. */
export interface StateMachineOwner {
  readonly stateMachine: StateMachine;
  /** Tells a function the state machine's ARN and grants exactly the listed actions on it. */
  bind(fn: LambdaFunction, access: readonly StateMachineAccess[]): void;
}

export interface StandardStateMachineProps {
  readonly machine: StateMachineName;
  /** The functions its Task states invoke, by the ASL substitution that names each. */
  readonly tasks: Readonly<Record<string, LambdaFunction>>;
  /** The construct id of its log group. */
  readonly logsId: string;
}

/**
 * A Standard state machine (pay per state transition, nothing while an execution waits) from its ASL file, with
 * tracing, errors logged, and the invoke grant on exactly its task functions. Created in the owner's scope, so
 * each machine keeps the logical id it was deployed with.
 */
export function standardStateMachine(scope: Construct, id: string, props: StandardStateMachineProps): StateMachine {
  const stack = Stack.of(scope);
  const stateMachine = new StateMachine(scope, id, {
    stateMachineType: StateMachineType.STANDARD,
    // Inline rather than an S3 asset (DefinitionBody.fromFile): the template then shows exactly what runs.
    definitionBody: DefinitionBody.fromString(readFileSync(definitionFileOf(props.machine), 'utf8')),
    definitionSubstitutions: {
      Partition: stack.partition,
      ...Object.fromEntries(Object.entries(props.tasks).map(([substitution, fn]) => [substitution, fn.functionArn])),
    },
    tracingEnabled: true,
    logs: {
      destination: new LogGroup(scope, props.logsId, {
        // Under /aws/vendedlogs/ one account-wide resource policy covers Step Functions' log delivery; any other
        // name adds a statement per log group to a policy capped at 5,120 characters. The stack's id keeps the
        // name new for a stack created again after a deletion (the group is retained, as the others are).
        logGroupName: `/aws/vendedlogs/states/${stack.stackName}-${props.machine}-${Fn.select(2, Fn.split('/', Aws.STACK_ID))}`,
        retention: RetentionDays.ONE_MONTH,
      }),
      level: LogLevel.ERROR,
      includeExecutionData: false,
    },
  });
  for (const fn of Object.values(props.tasks)) fn.grantInvoke(stateMachine);
  return stateMachine;
}

/**
 * Sets the machine's ARN variable and grants the actions, in one call, so no function holds one without the other.
 * Stop acts on executions (arn:...:execution:<name>:*), the rest on the state machine.
 */
export function grantStateMachine(
  fn: LambdaFunction,
  machine: StateMachineName,
  stateMachine: StateMachine,
  access: readonly StateMachineAccess[],
): void {
  fn.addEnvironment(STATE_MACHINE_ENVS[machine], stateMachine.stateMachineArn);
  for (const action of access) {
    if (action === 'stop') stateMachine.grantExecution(fn, ...STATE_MACHINE_ACTIONS.stop);
    else stateMachine.grant(fn, ...STATE_MACHINE_ACTIONS[action]);
  }
}

/** Binds every state machine a route or task entry declares, through the construct that owns it. */
export function bindStateMachines(
  fn: LambdaFunction,
  grant: StateMachineGrant | undefined,
  owners: Partial<Record<StateMachineName, StateMachineOwner>>,
): void {
  for (const [machine, access] of Object.entries(grant ?? {}) as [StateMachineName, readonly StateMachineAccess[]][]) {
    const owner = owners[machine];
    if (!owner) throw new Error(`${fn.node.id} declares the ${machine} state machine, which its construct cannot reach`);
    owner.bind(fn, access);
  }
}
