import { CfnOutput, Duration, Stack, Token } from 'aws-cdk-lib';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction as LambdaTarget } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { taskFunctions } from '#functions/task-functions.ts';
import { ENDED_STATUSES } from '#engine/execution-reconciler.ts';
import { SECRETS_PREFIX_ENV, type StateMachineAccess } from '#shared/resources.ts';
import { SECRETS_PREFIX_OUTPUT, STATE_MACHINE_OUTPUT } from '#lib/cdk/stack-outputs.ts';
import { defaultBedrockModels, marketplaceGrants } from '#lib/cdk/bedrock-models.ts';
import type { Data } from './data.ts';
import type { HandlerFunction } from './handler-function.ts';
import { InferenceProfiles } from './inference-profiles.ts';
import { bindStateMachines, grantStateMachine, standardStateMachine, type StateMachineOwner } from './state-machines.ts';
import { createTaskFunction, tasksOf } from './task-function.ts';

export interface WorkflowEngineProps {
  readonly data: Data;
  /**
   * Reserved concurrency of the step function (RunStep and RecordFailure): caps how many steps run at once, so a
   * burst of runs cannot take the account's whole Lambda concurrency (or Bedrock quota) from the API functions, and
   * guarantees the steps that much. Steps over the cap are throttled and retried by the state machine with jitter.
   * @default undefined, the step function shares the account's unreserved concurrency
   */
  readonly stepReservedConcurrency?: number;
  /**
   * The Bedrock models and inference profiles published workflows may name (llm, agent and image nodes): the step
   * function may invoke these and no others.
   * @default the region's defaultBedrockModels (lib/cdk/bedrock-models.ts)
   */
  readonly bedrockModels?: readonly string[];
}

/** The task-table entry whose function runs RunStep and RecordFailure. */
const STEP_FUNCTION_ID = 'WorkflowStep';
/** The reconciler is invoked asynchronously: EventBridge retries delivery, Lambda retries a failed invocation. */
const EXECUTION_ENDED_DELIVERY = { retryAttempts: 185, maxEventAge: Duration.hours(24) };
const EXECUTION_ENDED_INVOCATION = { retryAttempts: 2, maxEventAge: Duration.hours(6) };

/**
 * The workflow engine: the Standard state machine of `statemachines/workflow.asl.json` (published workflow runs and
 * their callbacks), the functions its tasks invoke and the reconciler of its executions, from the task-function table.
 */
export class WorkflowEngine extends Construct implements StateMachineOwner {
  public readonly stateMachine: StateMachine;
  public readonly functions: Record<string, HandlerFunction> = {};
  /** Projects' tool secrets: SSM SecureString parameters `<prefix>/<project>/<NAME>`, read by the step function only. */
  public readonly secretsPrefix: string;
  /** The Bedrock models the step function may invoke. */
  public readonly bedrockModels: readonly string[];
  /** One tagged application inference profile per allowed model: the step function calls the models through these. */
  public readonly inferenceProfiles: InferenceProfiles;

  constructor(scope: Construct, id: string, props: WorkflowEngineProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.secretsPrefix = `/${stack.stackName}/secrets`;
    if (!props.bedrockModels && Token.isUnresolved(stack.region))
      throw new Error(`${id}: the default Bedrock models depend on the region; give its stack env.region`);
    const models = (this.bedrockModels = props.bedrockModels ?? defaultBedrockModels(stack.region));
    this.inferenceProfiles = new InferenceProfiles(this, 'InferenceProfiles', { models });
    const { own, invoked } = tasksOf(taskFunctions, 'workflow');
    for (const task of own) {
      if (task.announcesHandoffs || task.trigger === 'nightly')
        throw new Error(`${task.id}: hand-offs and the nightly schedule are the collection's`);
      const fn = createTaskFunction(this, task, props.data);
      if (task.invokesBedrock) {
        // Every call goes through the model's tagged application inference profile: ConverseStream needs
        // InvokeModelWithResponseStream (InvokeModel for Converse and image models), on the profile and on what it copies.
        this.inferenceProfiles.grantInvoke(fn);
        // A third-party model's first call subscribes the account to its Marketplace product (marketplaceGrants says why).
        for (const grant of marketplaceGrants(models)) fn.addToRolePolicy(new PolicyStatement({ ...grant, resources: ['*'] }));
      }
      if (task.readsSecrets) {
        fn.addEnvironment(SECRETS_PREFIX_ENV, this.secretsPrefix);
        // SecureStrings under the AWS managed key aws/ssm: its key policy lets SSM decrypt for any principal of the account.
        fn.addToRolePolicy(
          new PolicyStatement({
            actions: ['ssm:GetParameter', 'ssm:GetParameters'],
            resources: [`arn:${stack.partition}:ssm:${stack.region}:${stack.account}:parameter${this.secretsPrefix}/*`],
          }),
        );
      }
      this.functions[task.id] = fn;
    }
    if (props.stepReservedConcurrency !== undefined) {
      if (!Number.isInteger(props.stepReservedConcurrency) || props.stepReservedConcurrency < 1) {
        throw new Error('stepReservedConcurrency must be a whole number of at least 1');
      }
      (this.functions[STEP_FUNCTION_ID]!.node.defaultChild as CfnFunction).reservedConcurrentExecutions = props.stepReservedConcurrency;
    }

    this.stateMachine = standardStateMachine(this, 'WorkflowStateMachine', {
      machine: 'workflow',
      tasks: Object.fromEntries(invoked.map((task) => [task.arnSubstitution, this.functions[task.id]!])),
      logsId: 'StateMachineLogs',
    });

    for (const task of own) {
      bindStateMachines(this.functions[task.id]!, task.stateMachines, { workflow: this });
      if (task.trigger === 'executionEnded') this.onExecutionEnded(this.functions[task.id]!);
    }

    new CfnOutput(this, STATE_MACHINE_OUTPUT, { key: STATE_MACHINE_OUTPUT, value: this.stateMachine.stateMachineArn });
    new CfnOutput(this, SECRETS_PREFIX_OUTPUT, { key: SECRETS_PREFIX_OUTPUT, value: this.secretsPrefix });
  }

  /**
   * Step Functions sends every status change of a Standard execution to the default event bus at no charge;
   * this rule passes the endings an execution's own path may not have recorded to the reconciler. It names this state
   * machine only: the collection's executions are not runs.
   */
  private onExecutionEnded(fn: HandlerFunction): void {
    const rule = new Rule(this, 'ExecutionEndedRule', {
      description: 'Workflow executions that ended FAILED, TIMED_OUT or ABORTED, for the execution-ended reconciler',
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: { stateMachineArn: [this.stateMachine.stateMachineArn], status: [...ENDED_STATUSES] },
      },
    });
    rule.addTarget(new LambdaTarget(fn, EXECUTION_ENDED_DELIVERY));
    fn.configureAsyncInvoke(EXECUTION_ENDED_INVOCATION);
  }

  /**
   * Tells a function the workflow state machine's ARN and grants exactly the listed actions. A function that starts
   * runs is deployed after the step function, so an execution always meets a step that knows how it was started (when execute
   * took over writing the user's message, a step from before would have written it a second time).
   */
  public bind(fn: LambdaFunction, access: readonly StateMachineAccess[]): void {
    grantStateMachine(fn, 'workflow', this.stateMachine, access);
    if (access.includes('start')) fn.node.addDependency(this.functions[STEP_FUNCTION_ID]!);
  }
}
