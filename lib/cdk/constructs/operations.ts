import { CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import { CfnBudget } from 'aws-cdk-lib/aws-budgets';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { ROUTE_GROUPS } from '#functions/routes.ts';
import type { ROUTE_GROUP_METRICS } from '#shared/lambda/custom-metrics.ts';
import { POWERTOOLS_ENVIRONMENT } from '#lib/cdk/powertools-environment.ts';
import type { Api } from './api.ts';
import type { Data } from './data.ts';
import type { WorkflowEngine } from './workflow-engine.ts';
import type { Collection } from './collection.ts';
import type { HandlerFunction } from './handler-function.ts';
import { alarmTopicPolicyStatements, BUDGETS_SERVICE_PRINCIPAL, CLOUDWATCH_SERVICE_PRINCIPAL } from '#lib/cdk/alarm-topic-policy.ts';
import { OPERATIONS_MODE_OUTPUT, OPERATIONS_MODES, type OperationsMode } from '#lib/cdk/stack-outputs.ts';
import { deployedTableName, type TableName } from '#shared/resources.ts';
import { COLLECTION_TIME_ZONE, NIGHTLY_DEADLINE_HOUR } from '#shared/collection-night.ts';

export interface OperationsProps {
  readonly api: Api;
  readonly engine: WorkflowEngine;
  readonly collection: Collection;
  readonly data: Data;
  /** Subscribes this address to the alarm topic (CDK context `alarmEmail`). */
  readonly alarmEmail?: string;
  /** An AWS Budgets monthly cost budget with alerts at 80 % and 100 % (CDK context `monthlyBudgetUsd`). */
  readonly monthlyBudgetUsd?: number;
  /** How much watching the stack pays for every month (CDK context `operations`). @default 'full' */
  readonly mode?: OperationsMode;
}

export type { OperationsMode };

/**
 * The alarms a lean deployment keeps, each with the number of metrics it reads (CloudWatch bills an alarm per metric
 * it reads, so lib/pricing prices the lean stack from this; a template test holds it to the alarms synthesized).
 */
export const LEAN_ALARM_METRICS: Readonly<Record<string, number>> = {
  CollectionExecutionsFailed: 1,
  CollectionExecutionsTimedOut: 1,
  NightlyScheduleFailed: 2,
  NightlyDeadLetters: 1,
};

/** The CDK context value `operations` (`-c operations=lean`); a value that is not a mode fails the synthesis, naming it. */
export function parseOperationsMode(value: unknown): OperationsMode {
  if (value === undefined) return 'full';
  const mode = typeof value === 'string' ? value.trim() : value;
  if (!OPERATIONS_MODES.includes(mode as OperationsMode))
    throw new Error(`CDK context operations must be ${OPERATIONS_MODES.map((m) => `"${m}"`).join(' or ')}, got ${JSON.stringify(value)}`);
  return mode as OperationsMode;
}

/** Why each alarm exists and what it means when it fires; lib/cdk/README.md's operator table is this list. */
export interface AlarmDescription {
  readonly id: string;
  readonly reason: string;
}

const NAMESPACE = POWERTOOLS_ENVIRONMENT.POWERTOOLS_METRICS_NAMESPACE!;
const SERVICE = POWERTOOLS_ENVIRONMENT.POWERTOOLS_SERVICE_NAME!;
const FIVE_MINUTES = Duration.minutes(5);
/** p99 latency worth waking someone for, per route group whose latency is the API's own (long routes follow runs). */
export const LATENCY_P99_MS = { webhooks: 1000, published: 2000 } as const;
/** Every stop through the API aborts its execution: only a burst of aborts says something is wrong. */
const ABORTED_EXECUTIONS_PER_15_MINUTES = 20;
/** Server errors as a share of a route group's requests, in percent. */
const SERVER_ERROR_PERCENT = 1;

/**
 * What the on-call engineer and finance see after `cdk deploy`: one SNS topic (KMS-encrypted) that every alarm
 * notifies, one dashboard, and an optional monthly budget. The alarms, the dashboard and the key are billed per month
 * whatever the traffic (see lib/pricing/README.md, "What it costs"); `mode: 'lean'` keeps the topic, its key, the
 * budget and the alarms of LEAN_ALARM_METRICS only.
 */
export class Operations extends Construct {
  public readonly topic: Topic;
  public readonly key: Key;
  public readonly alarms: Alarm[] = [];
  public readonly descriptions: AlarmDescription[] = [];
  /** None in a lean deployment. */
  public readonly dashboard: Dashboard | undefined;
  public readonly budget: CfnBudget | undefined;
  public readonly mode: OperationsMode;

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    this.mode = props.mode ?? 'full';
    new CfnOutput(this, OPERATIONS_MODE_OUTPUT, { key: OPERATIONS_MODE_OUTPUT, value: this.mode });
    const stack = Stack.of(this);
    this.key = new Key(this, 'AlarmTopicKey', { enableKeyRotation: true, description: 'Encrypts the alarm topic' });
    // CloudWatch alarms and Budgets publish to the encrypted topic; both need the key to do it.
    for (const service of [CLOUDWATCH_SERVICE_PRINCIPAL, BUDGETS_SERVICE_PRINCIPAL]) {
      this.key.addToResourcePolicy(
        new PolicyStatement({
          actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          principals: [new ServicePrincipal(service)],
          resources: ['*'],
        }),
      );
    }
    // TLS is enforced by the policy's own statement (alarm-topic-policy.ts), which the twin evaluates too.
    this.topic = new Topic(this, 'AlarmTopic', { masterKey: this.key, displayName: `${stack.stackName} alarms` });
    const place = { partition: stack.partition, region: stack.region, account: stack.account, stackName: stack.stackName };
    for (const statement of alarmTopicPolicyStatements({ ...place, topicArn: this.topic.topicArn }))
      this.topic.addToResourcePolicy(PolicyStatement.fromJson(statement));
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));

    this.apiAlarms(props.api);
    this.functionAlarms({ ...props.api.functions, ...props.engine.functions, ...props.collection.functions });
    this.engineAlarms(props.engine);
    this.collectionAlarms(props.collection);
    this.dataAlarms(props.data);
    this.dashboard = this.mode === 'lean' ? undefined : this.buildDashboard(props);
    this.budget = props.monthlyBudgetUsd === undefined ? undefined : this.buildBudget(props.monthlyBudgetUsd);
  }

  private alarm(
    id: string,
    reason: string,
    metric: IMetric,
    options: { threshold: number; periods?: number; datapoints?: number; lessThan?: boolean },
  ): Alarm | undefined {
    if (this.mode === 'lean' && !(id in LEAN_ALARM_METRICS)) return undefined;
    const alarm = new Alarm(this, id, {
      metric,
      threshold: options.threshold,
      evaluationPeriods: options.periods ?? 1,
      datapointsToAlarm: options.datapoints ?? options.periods ?? 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: reason,
    });
    alarm.addAlarmAction(new SnsAction(this.topic));
    this.alarms.push(alarm);
    this.descriptions.push({ id, reason });
    return alarm;
  }

  private productMetric(name: string, options: { group?: string; statistic?: string; period?: Duration } = {}): Metric {
    return new Metric({
      namespace: NAMESPACE,
      metricName: name,
      dimensionsMap: { service: SERVICE, ...(options.group ? { RouteGroup: options.group } : {}) },
      statistic: options.statistic ?? 'Sum',
      period: options.period ?? FIVE_MINUTES,
    });
  }

  /**
   * A route group's request metric: the functions publish the REST API's groups (HttpRequests, Http4xx, Http5xx,
   * HttpLatency); the webhook API's HTTP API measures its own requests (AWS/ApiGateway Count, 4xx, 5xx, Latency), its
   * own answers (throttle, failed integration) included, at no charge and at no log byte per request.
   */
  private requestMetric(api: Api, group: string, name: (typeof ROUTE_GROUP_METRICS)[number], statistic = 'Sum'): Metric {
    if (group !== 'webhooks') return this.productMetric(name, { group, statistic });
    const options = { statistic, period: FIVE_MINUTES };
    const httpApi = api.webhookApi.httpApi;
    if (name === 'HttpRequests') return httpApi.metricCount(options);
    if (name === 'Http5xx') return httpApi.metricServerError(options);
    if (name === 'Http4xx') return httpApi.metricClientError(options);
    return httpApi.metricLatency(options);
  }

  private apiAlarms(api: Api): void {
    for (const group of ROUTE_GROUPS) {
      const rate = new MathExpression({
        expression: 'IF(requests >= 20, 100 * errors / requests, 0)',
        usingMetrics: { requests: this.requestMetric(api, group, 'HttpRequests'), errors: this.requestMetric(api, group, 'Http5xx') },
        period: FIVE_MINUTES,
        label: `${group} 5xx %`,
      });
      this.alarm(
        `ServerErrors-${group}`,
        `More than ${SERVER_ERROR_PERCENT} % of ${group} requests answered 5xx in 2 of 3 five-minute periods (from 20 requests): ` +
          'callers are failing; a webhook sender must retry.',
        rate,
        { threshold: SERVER_ERROR_PERCENT, periods: 3, datapoints: 2 },
      );
    }
    for (const [group, ms] of Object.entries(LATENCY_P99_MS)) {
      this.alarm(
        `LatencyP99-${group}`,
        `p99 latency of ${group} requests at or above ${ms} ms for 15 minutes: a datastore or a dependency slows every caller.`,
        this.requestMetric(api, group, 'HttpLatency', 'p99'),
        { threshold: ms, periods: 3 },
      );
    }
    // What the REST API's handlers never see: 502 (a crashed or oversized answer) and 504 (an integration timeout). The
    // webhook API's own 5xx are in its ServerErrors alarm already (its metrics are the HTTP API's).
    this.alarm(
      'GatewayServerErrors',
      'The REST API answered 5xx to more than 1 % of requests in 2 of 3 five-minute periods, ' +
        'including 502/504 that no handler saw (crashes, timeouts).',
      api.restApi.metricServerError({ statistic: 'Average', period: FIVE_MINUTES }),
      { threshold: 0.01, periods: 3, datapoints: 2 },
    );
  }

  private functionAlarms(functions: Record<string, HandlerFunction>): void {
    for (const [id, fn] of Object.entries(functions)) {
      this.alarm(
        `Errors-${id}`,
        `${id} failed an invocation (an uncaught error or a timeout): a request answered 502, or a task was retried.`,
        fn.metricErrors({ period: FIVE_MINUTES }),
        {
          threshold: 1,
        },
      );
      this.alarm(
        `Throttles-${id}`,
        `${id} was throttled: the account's (or the step's reserved) concurrency ran out.`,
        fn.metricThrottles({ period: FIVE_MINUTES }),
        {
          threshold: 1,
        },
      );
    }
  }

  private engineAlarms(engine: WorkflowEngine): void {
    const machine = engine.stateMachine;
    this.alarm(
      'ExecutionsFailed',
      'A workflow execution FAILED: the state machine itself broke (a workflow error ends its execution normally).',
      machine.metricFailed({ period: FIVE_MINUTES }),
      {
        threshold: 1,
      },
    );
    this.alarm(
      'ExecutionsTimedOut',
      'A workflow execution TIMED OUT: an execution outlived the state machine timeout.',
      machine.metricTimedOut({ period: FIVE_MINUTES }),
      { threshold: 1 },
    );
    this.alarm(
      'ExecutionsAborted',
      `${ABORTED_EXECUTIONS_PER_15_MINUTES} or more workflow executions ABORTED in 15 minutes: ` +
        'stops through the API abort executions, so only a burst is unusual.',
      machine.metricAborted({ period: Duration.minutes(15) }),
      { threshold: ABORTED_EXECUTIONS_PER_15_MINUTES },
    );
    this.alarm(
      'CallbacksAbandoned',
      'A completion callback gave up after its retries: a caller was not told its execution ended.',
      this.productMetric('CallbacksAbandoned'),
      {
        threshold: 1,
      },
    );
  }

  /**
   * The collection's own executions: one that fails or times out is a sweep that a batch's retries could not finish (a
   * platform error, never a sender's). No abort alarm: only an operator stops a collection sweep.
   */
  private collectionAlarms(collection: Collection): void {
    const machine = collection.stateMachine;
    this.alarm(
      'CollectionExecutionsFailed',
      "A collection sweep's execution FAILED: a batch failed after its retries with an error that is not a sender's " +
        "(S3, DynamoDB, EventBridge, the function itself). The task's next sweep takes up its events; `admin collect` starts one now.",
      machine.metricFailed({ period: FIVE_MINUTES }),
      { threshold: 1 },
    );
    this.alarm(
      'CollectionExecutionsTimedOut',
      "A collection sweep's execution TIMED OUT: a sweep outlived the state machine timeout.",
      machine.metricTimedOut({ period: FIVE_MINUTES }),
      {
        threshold: 1,
      },
    );
    const nightly = collection.nightly;
    if (nightly) {
      this.alarm(
        'NightlyScheduleFailed',
        "The nightly collection schedule could not invoke its function (after its retries): tonight's collection did not start.",
        new MathExpression({
          expression: 'errors + dropped',
          usingMetrics: {
            errors: nightly.group.metricTargetErrors({ period: Duration.hours(1), statistic: 'Sum' }),
            dropped: nightly.group.metricDropped({ period: Duration.hours(1), statistic: 'Sum' }),
          },
          period: Duration.hours(1),
        }),
        { threshold: 1 },
      );
      this.alarm(
        'NightlyDeadLetters',
        "A nightly trigger landed in the dead-letter queue: look at its message, then start the night's sweeps with `admin collect`.",
        nightly.deadLetters.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }),
        { threshold: 1 },
      );
      this.alarm(
        'NightlySweepsLate',
        `A nightly collection sweep had not finished by ${String(NIGHTLY_DEADLINE_HOUR).padStart(2, '0')}:00 ${COLLECTION_TIME_ZONE} ` +
          '(checked by the deadline schedule): hand-offs are late for the analysis.',
        this.productMetric('NightlySweepsLate', { statistic: 'Maximum', period: Duration.hours(1) }),
        { threshold: 1 },
      );
    }
  }

  private dataAlarms(data: Data): void {
    for (const [key, table] of Object.entries(data.tables)) {
      // Named as first deployed, as the tables themselves are: a new id would replace the alarm.
      const name = deployedTableName(key as TableName);
      this.alarm(
        `Throttled-${name}`,
        `DynamoDB throttled requests on the ${name} table: ` +
          'on-demand capacity is adapting to a burst (or a partition is hot); requests were retried or failed.',
        // Read and write throttle events per table: two metrics per alarm (an alarm is billed per metric it reads).
        new MathExpression({
          expression: 'reads + writes',
          usingMetrics: {
            reads: table.metric('ReadThrottleEvents', { statistic: 'Sum', period: FIVE_MINUTES }),
            writes: table.metric('WriteThrottleEvents', { statistic: 'Sum', period: FIVE_MINUTES }),
          },
          period: FIVE_MINUTES,
        }),
        { threshold: 1 },
      );
    }
  }

  private buildDashboard(props: OperationsProps): Dashboard {
    const dashboard = new Dashboard(this, 'Dashboard', { dashboardName: `${Stack.of(this).stackName}-operations` });
    const perGroup = (name: (typeof ROUTE_GROUP_METRICS)[number], statistic = 'Sum') =>
      ROUTE_GROUPS.map((group) => this.requestMetric(props.api, group, name, statistic).with({ label: `${group} ${name}` }));
    const sums = (...names: string[]) => names.map((name) => this.productMetric(name).with({ label: name }));
    dashboard.addWidgets(
      new TextWidget({
        markdown: `# ${Stack.of(this).stackName}\nAlarms notify the SNS topic; lib/cdk/README.md in the repository explains each one.`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      new GraphWidget({ title: 'Requests per route group', left: perGroup('HttpRequests'), width: 8 }),
      new GraphWidget({
        title: 'Latency p50 / p99 (ms)',
        left: [...perGroup('HttpLatency', 'p50'), ...perGroup('HttpLatency', 'p99')],
        width: 8,
      }),
      new GraphWidget({ title: '4xx and 5xx per route group', left: [...perGroup('Http4xx'), ...perGroup('Http5xx')], width: 8 }),
    );
    dashboard.addWidgets(
      new GraphWidget({ title: 'Webhook events', left: sums('EventsAccepted', 'EventsDuplicate'), width: 8 }),
      new GraphWidget({
        title: 'Workflow executions',
        left: sums('WorkflowRunsStarted', 'WorkflowRunsFinished', 'ApprovalsAwaited', 'CallbacksDelivered', 'CallbacksAbandoned'),
        width: 8,
      }),
      new GraphWidget({
        title: 'Workflow executions',
        left: [
          props.engine.stateMachine.metricSucceeded({ period: FIVE_MINUTES }),
          props.engine.stateMachine.metricFailed({ period: FIVE_MINUTES }),
          props.engine.stateMachine.metricAborted({ period: FIVE_MINUTES }),
        ],
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new GraphWidget({
        title: 'Event streams',
        left: sums('EventStreamsOpened', 'EventStreamsAbandoned', 'EventStreamsSlowReaders'),
        width: 8,
      }),
      new GraphWidget({
        title: 'Nightly collection',
        left: sums('ConversationsHandedOff', 'CollectionFailures', 'NightlySweepsLate'),
        width: 8,
      }),
    );
    const collection = props.collection.stateMachine;
    dashboard.addWidgets(
      new GraphWidget({
        title: 'Collection executions',
        left: [
          collection.metricSucceeded({ period: FIVE_MINUTES }),
          collection.metricFailed({ period: FIVE_MINUTES }),
          collection.metricAborted({ period: FIVE_MINUTES }),
        ],
        width: 8,
      }),
    );
    return dashboard;
  }

  private buildBudget(monthlyUsd: number): CfnBudget {
    if (!Number.isFinite(monthlyUsd) || monthlyUsd <= 0)
      throw new Error(`monthlyBudgetUsd must be a positive number of dollars, got ${monthlyUsd}`);
    const stack = Stack.of(this);
    return new CfnBudget(this, 'MonthlyBudget', {
      budget: {
        budgetName: `${stack.stackName}-monthly`,
        budgetType: 'COST',
        timeUnit: 'MONTHLY',
        budgetLimit: { amount: monthlyUsd, unit: 'USD' },
        // Only what carries this stack's Project tag (activate it as a cost allocation tag in Billing).
        costFilters: { TagKeyValue: [`user:Project$${PROJECT_TAG_VALUE}`] },
      },
      notificationsWithSubscribers: [80, 100].map((percent) => ({
        notification: { notificationType: 'ACTUAL', comparisonOperator: 'GREATER_THAN', threshold: percent, thresholdType: 'PERCENTAGE' },
        subscribers: [{ subscriptionType: 'SNS', address: this.topic.topicArn }],
      })),
    });
  }
}

/** The `Project` cost allocation tag every resource carries. */
export const PROJECT_TAG_VALUE = 'workflow-ingest';
