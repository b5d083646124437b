import { Aws, Duration, Fn, Stack, TimeZone } from 'aws-cdk-lib';
import { EventBus, Rule } from 'aws-cdk-lib/aws-events';
import { Schedule, ScheduleExpression, ScheduleGroup, ScheduleTargetInput, TimeWindow } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { LambdaFunction as LambdaTarget } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { CfnOutput } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { taskFunctions, type TaskFunction } from '#functions/task-functions.ts';
import { ENDED_STATUSES } from '#engine/execution-reconciler.ts';
import { SECRETS_PREFIX_ENV, STATE_MACHINE_ACTIONS, STATE_MACHINE_ENV, type Access, type BucketGrant, type BucketName, type StateMachineAccess, type TableName } from '#shared/resources.ts';
import { SECRETS_PREFIX_OUTPUT, STATE_MACHINE_OUTPUT } from '#lib/cdk/stack-outputs.ts';
import { bedrockModelArns, DEFAULT_BEDROCK_MODELS, marketplaceProductIds } from '#lib/cdk/bedrock-models.ts';
import type { Data } from './data.ts';
import { HandlerFunction } from './handler-function.ts';

const DEFINITION_FILE = fileURLToPath(new URL('../../../statemachines/workflow.asl.json', import.meta.url));

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
   * @default DEFAULT_BEDROCK_MODELS (lib/cdk/bedrock-models.ts)
   */
  readonly bedrockModels?: readonly string[];
}

/** The task-table entry whose function runs RunStep and RecordFailure. */
const STEP_FUNCTION_ID = 'WorkflowStep';
/** The reconciler is invoked asynchronously: EventBridge retries delivery, Lambda retries a failed invocation. */
const EXECUTION_ENDED_DELIVERY = { retryAttempts: 185, maxEventAge: Duration.hours(24) };
const EXECUTION_ENDED_INVOCATION = { retryAttempts: 2, maxEventAge: Duration.hours(6) };

/**
 * The workflow engine: one Standard state machine from `statemachines/workflow.asl.json` (pay per state
 * transition, nothing while a run waits), and the functions its tasks invoke, from the task-function table.
 */
export class WorkflowEngine extends Construct {
  public readonly stateMachine: StateMachine;
  public readonly functions: Record<string, HandlerFunction> = {};
  /** Collection hand-offs are announced here, for the analysis platform's rules. */
  public readonly handoffBus: EventBus;
  public nightlySchedule: Schedule | undefined;
  /** The nightly schedules' own group, so their metrics are theirs alone. */
  public nightlyScheduleGroup: ScheduleGroup | undefined;
  /** 04:00 Moscow: counts tonight's runs still unfinished (`NightlyRunsLate`), which an alarm watches. */
  public nightlyDeadlineCheck: Schedule | undefined;
  public nightlyDeadLetters: Queue | undefined;
  public nightlyScheduleRole: Role | undefined;
  /** Projects' tool secrets: SSM SecureString parameters `<prefix>/<project>/<NAME>`, read by the step function only. */
  public readonly secretsPrefix: string;
  /** The Bedrock models the step function may invoke. */
  public readonly bedrockModels: readonly string[];

  constructor(scope: Construct, id: string, props: WorkflowEngineProps) {
    super(scope, id);
    this.handoffBus = new EventBus(this, 'HandoffBus', { description: 'Conversations handed off by the nightly collection' });
    const stack = Stack.of(this);
    this.secretsPrefix = `/${stack.stackName}/secrets`;
    const models = (this.bedrockModels = props.bedrockModels ?? DEFAULT_BEDROCK_MODELS);
    for (const task of taskFunctions) {
      const fn = new HandlerFunction(this, task.id, { handler: task.handler, timeout: Duration.seconds(task.timeoutSeconds), memorySize: task.memorySize });
      for (const [table, access] of Object.entries(task.tables) as [TableName, Access][]) props.data.bindTable(fn, table, access);
      for (const [bucket, grant] of Object.entries(task.buckets ?? {}) as [BucketName, BucketGrant][]) props.data.bindBucket(fn, bucket, grant);
      if (task.invokesBedrock) {
        // ConverseStream needs InvokeModelWithResponseStream; Nova Canvas images need InvokeModel.
        const resources = bedrockModelArns(models, { partition: stack.partition, region: stack.region, account: stack.account });
        fn.addToRolePolicy(new PolicyStatement({ actions: ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'], resources }));
        const products = marketplaceProductIds(models);
        if (products.length > 0) {
          // A third-party model's first call subscribes the account; Subscribe is held to those products (ViewSubscriptions
          // takes no resource or condition). Unsubscribe stays with the operator.
          fn.addToRolePolicy(
            new PolicyStatement({
              actions: ['aws-marketplace:Subscribe'],
              resources: ['*'],
              conditions: { StringEquals: { 'aws-marketplace:ProductId': products } },
            }),
          );
          fn.addToRolePolicy(new PolicyStatement({ actions: ['aws-marketplace:ViewSubscriptions'], resources: ['*'] }));
        }
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
      if (task.announcesHandoffs) {
        fn.addEnvironment('HANDOFF_BUS_NAME', this.handoffBus.eventBusName);
        this.handoffBus.grantPutEventsTo(fn);
      }
      this.functions[task.id] = fn;
    }
    if (props.stepReservedConcurrency !== undefined) {
      if (!Number.isInteger(props.stepReservedConcurrency) || props.stepReservedConcurrency < 1) {
        throw new Error('stepReservedConcurrency must be a whole number of at least 1');
      }
      (this.functions[STEP_FUNCTION_ID]!.node.defaultChild as CfnFunction).reservedConcurrentExecutions = props.stepReservedConcurrency;
    }
    const invoked = taskFunctions.filter((task): task is TaskFunction & { arnSubstitution: string } => task.arnSubstitution !== undefined);

    this.stateMachine = new StateMachine(this, 'WorkflowStateMachine', {
      stateMachineType: StateMachineType.STANDARD,
      // Inline rather than an S3 asset: the template then shows exactly what runs.
      definitionBody: DefinitionBody.fromString(readFileSync(DEFINITION_FILE, 'utf8')),
      definitionSubstitutions: {
        Partition: Stack.of(this).partition,
        ...Object.fromEntries(invoked.map((task) => [task.arnSubstitution, this.functions[task.id]!.functionArn])),
      },
      tracingEnabled: true,
      logs: {
        destination: new LogGroup(this, 'StateMachineLogs', {
          // Under /aws/vendedlogs/ one account-wide resource policy covers Step Functions' log delivery; any other
          // name adds a statement per log group to a policy capped at 5,120 characters. The stack's id keeps the
          // name new for a stack created again after a deletion (the group is retained, as the others are).
          logGroupName: `/aws/vendedlogs/states/${Stack.of(this).stackName}-workflow-${Fn.select(2, Fn.split('/', Aws.STACK_ID))}`,
          retention: RetentionDays.ONE_MONTH,
        }),
        level: LogLevel.ERROR,
        includeExecutionData: false,
      },
    });
    for (const task of invoked) this.functions[task.id]!.grantInvoke(this.stateMachine);

    for (const task of taskFunctions) {
      // Only functions outside the definition may know the state machine; a task function would make a cycle.
      if (task.stateMachine) this.bind(this.functions[task.id]!, task.stateMachine);
      if (task.trigger === 'executionEnded') this.onExecutionEnded(this.functions[task.id]!);
      if (task.trigger === 'nightly') this.onNightly(this.functions[task.id]!);
    }

    new CfnOutput(this, STATE_MACHINE_OUTPUT, { key: STATE_MACHINE_OUTPUT, value: this.stateMachine.stateMachineArn });
    new CfnOutput(this, SECRETS_PREFIX_OUTPUT, { key: SECRETS_PREFIX_OUTPUT, value: this.secretsPrefix });
  }

  /**
   * Step Functions sends every status change of a Standard execution to the default event bus at no charge;
   * this rule passes the endings the run's own path may not have recorded to the reconciler.
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
   * The nightly collection: EventBridge Scheduler at 00:00 Europe/Moscow, no flexible window. A failed invocation
   * is retried at most twice within an hour, so no retry starts the night's runs after the 04:00 window; what
   * still fails lands in the dead-letter queue.
   */
  private onNightly(fn: HandlerFunction): void {
    this.nightlyDeadLetters = new Queue(this, 'NightlyDeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    // Its own role, invoking this one function only (the default is one shared role per stack).
    this.nightlyScheduleRole = new Role(this, 'NightlyScheduleRole', { assumedBy: new ServicePrincipal('scheduler.amazonaws.com') });
    this.nightlyScheduleGroup = new ScheduleGroup(this, 'NightlyScheduleGroup', {});
    this.nightlySchedule = new Schedule(this, 'NightlyCollection', {
      description: 'Nightly collection of webhook conversations, 00:00 Europe/Moscow',
      scheduleGroup: this.nightlyScheduleGroup,
      schedule: ScheduleExpression.cron({ minute: '0', hour: '0', timeZone: TimeZone.EUROPE_MOSCOW }),
      timeWindow: TimeWindow.off(),
      target: new LambdaInvoke(fn, { role: this.nightlyScheduleRole, deadLetterQueue: this.nightlyDeadLetters, maxEventAge: Duration.hours(1), retryAttempts: 2 }),
    });
    this.nightlyDeadlineCheck = new Schedule(this, 'NightlyDeadlineCheck', {
      description: 'Counts nightly collection runs not finished by 04:00 Europe/Moscow',
      scheduleGroup: this.nightlyScheduleGroup,
      schedule: ScheduleExpression.cron({ minute: '0', hour: '4', timeZone: TimeZone.EUROPE_MOSCOW }),
      timeWindow: TimeWindow.off(),
      target: new LambdaInvoke(fn, {
        role: this.nightlyScheduleRole,
        input: ScheduleTargetInput.fromObject({ check: 'deadline' }),
        deadLetterQueue: this.nightlyDeadLetters,
        maxEventAge: Duration.minutes(30),
        retryAttempts: 2,
      }),
    });
  }

  /**
   * Tells a function the state machine's ARN and grants exactly the listed actions. A function that starts runs is
   * deployed after the step function, so a run always meets a step that knows how it was started (when execute took
   * over writing the user's message, a step from before would have written it a second time).
   */
  public bind(fn: LambdaFunction, access: readonly StateMachineAccess[]): void {
    fn.addEnvironment(STATE_MACHINE_ENV, this.stateMachine.stateMachineArn);
    if (access.includes('start')) fn.node.addDependency(this.functions[STEP_FUNCTION_ID]!);
    for (const action of access) {
      // Stop acts on executions of this state machine only (arn:...:execution:<name>:*).
      if (action === 'stop') this.stateMachine.grantExecution(fn, ...STATE_MACHINE_ACTIONS.stop);
      else this.stateMachine.grant(fn, ...STATE_MACHINE_ACTIONS[action]);
    }
  }
}
