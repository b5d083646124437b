import { CfnOutput, Duration, Names, RemovalPolicy, Stack, TimeZone, type CfnResource } from 'aws-cdk-lib';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Schedule, ScheduleExpression, ScheduleGroup, ScheduleTargetInput, TimeWindow } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { taskFunctions } from '#functions/task-functions.ts';
import type { StateMachineAccess } from '#shared/resources.ts';
import { COLLECTION_STATE_MACHINE_OUTPUT } from '#lib/cdk/stack-outputs.ts';
import type { Data } from './data.ts';
import type { HandlerFunction } from './handler-function.ts';
import { bindStateMachines, grantStateMachine, standardStateMachine, type StateMachineOwner } from './state-machines.ts';
import { createTaskFunction, tasksOf } from './task-function.ts';
import { COLLECTION_TIME_ZONE, NIGHTLY_DEADLINE_HOUR, NIGHTLY_START_HOUR } from '#shared/collection-night.ts';

const COLLECTION_ZONE = TimeZone.of(COLLECTION_TIME_ZONE);
const hourOf = (hour: number) => `${String(hour).padStart(2, '0')}:00`;

export interface CollectionProps {
  readonly data: Data;
}

/** The nightly trigger's schedules (00:00 start, 04:00 deadline check), their group, role and dead-letter queue. */
export interface NightlySchedules {
  readonly schedule: Schedule;
  /** At the night's deadline hour: counts tonight's sweeps still unfinished (`NightlySweepsLate`), which an alarm watches. */
  readonly deadlineCheck: Schedule;
  /** The nightly schedules' own group, so their metrics are theirs alone. */
  readonly group: ScheduleGroup;
  readonly deadLetters: Queue;
  readonly role: Role;
}

/**
 * The nightly collection: the Standard state machine of `statemachines/collection.asl.json` (one execution per sweep of
 * a collection task), CollectBatch, the nightly trigger and its schedules, and the bus hand-offs are announced on.
 * Only its functions may start its executions.
 */
export class Collection extends Construct implements StateMachineOwner {
  public readonly stateMachine: StateMachine;
  public readonly functions: Record<string, HandlerFunction> = {};
  /** Collection hand-offs are announced here, for the analysis platform's rules. */
  public readonly handoffBus: EventBus;
  public readonly nightly: NightlySchedules | undefined;

  constructor(scope: Construct, id: string, props: CollectionProps) {
    super(scope, id);
    this.handoffBus = handoffBus(this);
    const { own, invoked } = tasksOf(taskFunctions, 'collection');
    for (const task of own) {
      if (task.invokesBedrock || task.readsSecrets || task.trigger === 'executionEnded') {
        throw new Error(`${task.id}: Bedrock, secrets and the execution-ended rule are the workflow engine's`);
      }
      const fn = createTaskFunction(this, task, props.data);
      if (task.announcesHandoffs) {
        fn.addEnvironment('HANDOFF_BUS_NAME', this.handoffBus.eventBusName);
        this.handoffBus.grantPutEventsTo(fn);
      }
      this.functions[task.id] = fn;
    }

    this.stateMachine = standardStateMachine(this, 'StateMachine', {
      machine: 'collection',
      tasks: Object.fromEntries(invoked.map((task) => [task.arnSubstitution, this.functions[task.id]!])),
      logsId: 'StateMachineLogs',
    });

    let nightly: NightlySchedules | undefined;
    for (const task of own) {
      bindStateMachines(this.functions[task.id]!, task.stateMachines, { collection: this });
      if (task.trigger === 'nightly') nightly = this.onNightly(this.functions[task.id]!);
    }
    this.nightly = nightly;

    new CfnOutput(this, COLLECTION_STATE_MACHINE_OUTPUT, {
      key: COLLECTION_STATE_MACHINE_OUTPUT,
      value: this.stateMachine.stateMachineArn,
    });
  }

  /** Tells a function the collection state machine's ARN and grants exactly the listed actions. */
  public bind(fn: LambdaFunction, access: readonly StateMachineAccess[]): void {
    grantStateMachine(fn, 'collection', this.stateMachine, access);
  }

  /**
   * EventBridge Scheduler at the start of the night in the collection's zone (shared/collection-night.ts), no flexible
   * window. A failed invocation is retried at most twice within an hour, so no retry starts the night's sweeps after
   * the deadline hour; what still fails lands in the
   * dead-letter queue.
   */
  private onNightly(fn: HandlerFunction): NightlySchedules {
    const deadLetters = new Queue(this, 'NightlyDeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    // Its own role, invoking this one function only (the default is one shared role per stack).
    const role = new Role(this, 'NightlyScheduleRole', { assumedBy: new ServicePrincipal('scheduler.amazonaws.com') });
    // Deleted with the stack: CDK gives the group a fixed name (<stack>-Collection-NightlyScheduleGroup-<hash>), which a
    // retained group would still hold when the stack is created again ("already exists"), and it holds nothing but the
    // stack's own schedules. A change of the removal policy alone keeps the group in place.
    const group = new ScheduleGroup(this, 'NightlyScheduleGroup', { removalPolicy: RemovalPolicy.DESTROY });
    const schedule = new Schedule(this, 'NightlyCollection', {
      description: `Nightly collection of webhook conversations, ${hourOf(NIGHTLY_START_HOUR)} ${COLLECTION_TIME_ZONE}`,
      scheduleGroup: group,
      schedule: ScheduleExpression.cron({ minute: '0', hour: String(NIGHTLY_START_HOUR), timeZone: COLLECTION_ZONE }),
      timeWindow: TimeWindow.off(),
      target: new LambdaInvoke(fn, { role, deadLetterQueue: deadLetters, maxEventAge: Duration.hours(1), retryAttempts: 2 }),
    });
    const deadlineCheck = new Schedule(this, 'NightlyDeadlineCheck', {
      description: `Counts nightly collection sweeps not finished by ${hourOf(NIGHTLY_DEADLINE_HOUR)} ${COLLECTION_TIME_ZONE}`,
      scheduleGroup: group,
      schedule: ScheduleExpression.cron({ minute: '0', hour: String(NIGHTLY_DEADLINE_HOUR), timeZone: COLLECTION_ZONE }),
      timeWindow: TimeWindow.off(),
      target: new LambdaInvoke(fn, {
        role,
        input: ScheduleTargetInput.fromObject({ check: 'deadline' }),
        deadLetterQueue: deadLetters,
        maxEventAge: Duration.minutes(30),
        retryAttempts: 2,
      }),
    });
    return { schedule, deadlineCheck, group, deadLetters, role };
  }
}

/** Where the hand-off bus was created before the collection had a construct of its own. */
const FORMER_HANDOFF_BUS_PATH = ['Engine', 'HandoffBus'];

/**
 * The hand-off bus keeps the name and the logical id it had under the workflow engine: the analysis platform's rules
 * subscribe to it by name, and a new logical id would have CloudFormation replace the bus, whose deletion fails while
 * other stacks' rules sit on it. Both are derived from a place in the construct tree, so they are derived here from
 * the former one.
 */
function handoffBus(scope: Construct): EventBus {
  const stack = Stack.of(scope);
  const formerPlace = (components: readonly string[]) => {
    let construct = new Construct(undefined as unknown as Construct, '');
    for (const component of components) construct = new Construct(construct, component);
    return Names.uniqueId(construct);
  };
  const bus = new EventBus(scope, 'HandoffBus', {
    description: 'Conversations handed off by the nightly collection',
    eventBusName: formerPlace([stack.node.id, ...FORMER_HANDOFF_BUS_PATH]),
  });
  (bus.node.defaultChild as CfnResource).overrideLogicalId(formerPlace([...FORMER_HANDOFF_BUS_PATH, 'Resource']));
  return bus;
}
