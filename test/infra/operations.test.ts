import { deployedTableName, type TableName } from '#shared/resources.ts';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_GROUPS, routeFunctions } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';
import { alarmMetricCount } from '#lib/pricing/fixed-costs.ts';

/** What the on-call engineer and finance get from a deploy: alarms, the dashboard, tags and the budget. */
const templateApp = (context: Record<string, unknown> = {}) =>
  new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], ...context } });

let stack: PlatformStack;
let template: Template;
type Resource = { Type: string; Properties?: Record<string, any> };
let resources: Record<string, Resource>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);

beforeAll(() => {
  stack = new PlatformStack(templateApp({ alarmEmail: 'oncall@example.com', costCenter: 'cc-42' }), 'Ops', {
    env: { region: 'us-east-1' },
  });
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources as Record<string, Resource>;
});

const alarms = () =>
  Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((alarm) => alarm.Properties as Record<string, any>);
const alarmNamed = (id: string) => {
  const logicalIdPattern = new RegExp(`^Operations${id.replace(/[^A-Za-z0-9]/g, '')}[0-9A-F]{8}$`);
  const found = Object.entries(resources).find(
    ([logicalId, resource]) => resource.Type === 'AWS::CloudWatch::Alarm' && logicalIdPattern.test(logicalId),
  );
  expect(found, id).toBeDefined();
  return found![1].Properties!;
};
const metricNamesOf = (alarm: Record<string, any>) =>
  alarm.MetricName
    ? [alarm.MetricName as string]
    : ((alarm.Metrics ?? []) as { MetricStat?: { Metric: { MetricName: string } } }[]).flatMap((metric) =>
        metric.MetricStat ? [metric.MetricStat.Metric.MetricName] : [],
      );

describe('the alarm topic', () => {
  it('is encrypted with a rotating key that CloudWatch and Budgets may use, takes TLS only, and mails the on-call address', () => {
    const topicId = idOf(stack.operations.topic);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [idOf(stack.operations.key), 'Arn'] } });
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    const keyPolicy = JSON.stringify(resources[idOf(stack.operations.key)]!.Properties!.KeyPolicy);
    expect(keyPolicy).toContain('cloudwatch.amazonaws.com');
    expect(keyPolicy).toContain('budgets.amazonaws.com');
    const topicPolicy = JSON.stringify(template.findResources('AWS::SNS::TopicPolicy'));
    expect(topicPolicy).toContain('aws:SecureTransport');
    expect(topicPolicy).toContain('budgets.amazonaws.com');
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: { Ref: topicId },
    });
  });
});

describe('alarms', () => {
  it('all notify the one topic and say why they exist', () => {
    const topicId = idOf(stack.operations.topic);
    expect(alarms().length).toBe(stack.operations.descriptions.length);
    for (const alarm of alarms()) {
      expect(alarm.AlarmActions).toEqual([{ Ref: topicId }]);
      expect((alarm.AlarmDescription as string).length).toBeGreaterThan(30);
      expect(alarm.TreatMissingData).toBe('notBreaching');
    }
  });

  it("watch the 5xx rate of every route group and the p99 latency of the quick ones, plus API Gateway's own 5xx", () => {
    for (const group of ROUTE_GROUPS.filter((name) => name !== 'webhooks')) {
      const alarm = alarmNamed(`ServerErrors-${group}`);
      expect(metricNamesOf(alarm).sort()).toEqual(['Http5xx', 'HttpRequests']);
      expect(alarm.Threshold).toBe(1);
      expect(JSON.stringify(alarm.Metrics)).toContain(`"RouteGroup","Value":"${group}"`);
    }
    // The webhook API's HTTP API measures itself: its own 5xx (throttle aside, a failed integration) count too.
    const webhooks = alarmNamed('ServerErrors-webhooks');
    expect(metricNamesOf(webhooks).sort()).toEqual(['5xx', 'Count']);
    expect(JSON.stringify(webhooks.Metrics)).toContain('"Namespace":"AWS/ApiGateway"');
    expect(JSON.stringify(webhooks.Metrics)).toContain('"Name":"ApiId"');
    expect(alarmNamed('LatencyP99-webhooks')).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: 'Latency',
      ExtendedStatistic: 'p99',
      Threshold: 1000,
      EvaluationPeriods: 3,
    });
    expect(alarmNamed('LatencyP99-published')).toMatchObject({ MetricName: 'HttpLatency', ExtendedStatistic: 'p99', Threshold: 2000 });
    expect(alarmNamed('GatewayServerErrors')).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5XXError',
      Statistic: 'Average',
      Threshold: 0.01,
    });
  });

  it('watch errors and throttles of every function', () => {
    for (const { id } of [...routeFunctions(), ...taskFunctions]) {
      expect(alarmNamed(`Errors-${id}`), id).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Errors', Threshold: 1 });
      expect(alarmNamed(`Throttles-${id}`), id).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Throttles', Threshold: 1 });
    }
  });

  it('watch executions, callbacks, the nightly collection and every table', () => {
    const onMachine = (owner: 'engine' | 'collection') => [{ Name: 'StateMachineArn', Value: { Ref: idOf(stack[owner].stateMachine) } }];
    expect(alarmNamed('ExecutionsFailed')).toMatchObject({
      Namespace: 'AWS/States',
      MetricName: 'ExecutionsFailed',
      Threshold: 1,
      Dimensions: onMachine('engine'),
    });
    expect(alarmNamed('ExecutionsTimedOut')).toMatchObject({
      MetricName: 'ExecutionsTimedOut',
      Threshold: 1,
      Dimensions: onMachine('engine'),
    });
    expect(alarmNamed('ExecutionsAborted')).toMatchObject({
      MetricName: 'ExecutionsAborted',
      Threshold: 20,
      Period: 900,
      Dimensions: onMachine('engine'),
    });
    // The collection's executions have alarms of their own: a failed collection sweep is not a broken workflow engine.
    expect(alarmNamed('CollectionExecutionsFailed')).toMatchObject({
      Namespace: 'AWS/States',
      MetricName: 'ExecutionsFailed',
      Threshold: 1,
      Dimensions: onMachine('collection'),
    });
    expect(alarmNamed('CollectionExecutionsTimedOut')).toMatchObject({
      MetricName: 'ExecutionsTimedOut',
      Threshold: 1,
      Dimensions: onMachine('collection'),
    });
    expect(alarmNamed('CallbacksAbandoned')).toMatchObject({ Namespace: 'WorkflowIngest', MetricName: 'CallbacksAbandoned', Threshold: 1 });
    expect(metricNamesOf(alarmNamed('NightlyScheduleFailed')).sort()).toEqual(['InvocationDroppedCount', 'TargetErrorCount']);
    expect(alarmNamed('NightlyDeadLetters')).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
    });
    expect(alarmNamed('NightlySweepsLate')).toMatchObject({ MetricName: 'NightlySweepsLate', Threshold: 1 });
    // Each table's alarm keeps the name the table was first deployed under, so an update replaces no alarm.
    for (const table of Object.keys(stack.data.tables) as TableName[])
      expect(metricNamesOf(alarmNamed(`Throttled-${deployedTableName(table)}`)).sort(), table).toEqual([
        'ReadThrottleEvents',
        'WriteThrottleEvents',
      ]);
    expect(alarmNamed('Throttled-conversations')).toBeDefined();
    expect(alarmNamed('Throttled-runEvents')).toBeDefined();
  });
});

describe('the fixed monthly cost the cost report lists', () => {
  it('counts exactly the metrics the alarms read (alarms are billed per metric)', () => {
    const metricsRead = alarms().reduce(
      (sum, alarm) =>
        sum + (alarm.MetricName ? 1 : (alarm.Metrics as { MetricStat?: unknown }[]).filter((metric) => metric.MetricStat).length),
      0,
    );
    expect(alarmMetricCount()).toBe(metricsRead);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    template.resourceCountIs('AWS::KMS::Key', 1);
  });
});

describe('the dashboard', () => {
  it('shows requests, latency and errors per route group (the webhook API its own), the business counts, streams and the collection', () => {
    const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]!.Properties!.DashboardBody);
    for (const metric of [
      'HttpRequests',
      'HttpLatency',
      'Http4xx',
      'Http5xx',
      'EventsAccepted',
      'EventsDuplicate',
      'WorkflowRunsStarted',
      'WorkflowRunsFinished',
      'ApprovalsAwaited',
      'EventStreamsOpened',
      'ConversationsHandedOff',
      'CollectionFailures',
      'NightlySweepsLate',
      'ExecutionsFailed',
    ]) {
      expect(body, metric).toContain(metric);
    }
    expect(body).toContain('p99');
    expect(body).toContain('p50');
    expect(body).toMatch(/AWS\/ApiGateway\W+Latency/);
  });
});

describe('cost allocation tags', () => {
  /** Types CloudFormation cannot tag: each is part of a tagged resource (a policy of a role, a method of an API). */
  const UNTAGGABLE = new Set([
    'AWS::IAM::Policy',
    'AWS::Lambda::Permission',
    'AWS::Lambda::EventInvokeConfig',
    'AWS::S3::BucketPolicy',
    'AWS::SQS::QueuePolicy',
    'AWS::SNS::TopicPolicy',
    'AWS::SNS::Subscription',
    'AWS::Scheduler::Schedule',
    'AWS::ApiGateway::Account',
    'AWS::ApiGateway::Deployment',
    'AWS::ApiGateway::Resource',
    'AWS::ApiGateway::Method',
    'AWS::ApiGateway::GatewayResponse',
    'AWS::ApiGatewayV2::Route',
    'AWS::ApiGatewayV2::Integration',
    'AWS::CloudWatch::Dashboard',
    'Custom::AWSCDKOpenIdConnectProvider',
    'AWS::Budgets::Budget',
  ]);

  it('puts Project, Component and CostCenter on every taggable resource', () => {
    const components = new Set<string>();
    for (const [logicalId, resource] of Object.entries(resources)) {
      if (UNTAGGABLE.has(resource.Type)) continue;
      const tags = (resource.Properties?.Tags ?? []) as { Key: string; Value: string }[] | Record<string, string>;
      const byKey = Array.isArray(tags) ? Object.fromEntries(tags.map((tag) => [tag.Key, tag.Value])) : tags;
      expect(byKey, `${logicalId} (${resource.Type})`).toMatchObject({
        Project: 'workflow-ingest',
        CostCenter: 'cc-42',
        Component: expect.any(String),
      });
      components.add(byKey.Component!);
    }
    expect([...components].sort()).toEqual(['api', 'collection', 'data', 'engine', 'operations']);
  });

  it('tags cost center "unassigned" when the context names none', () => {
    const plain = Template.fromStack(new PlatformStack(templateApp(), 'Plain', { env: { region: 'us-east-1' } }));
    plain.hasResourceProperties('AWS::DynamoDB::Table', { Tags: Match.arrayWith([{ Key: 'CostCenter', Value: 'unassigned' }]) });
  });
});

describe('the monthly budget', () => {
  it('exists only with monthlyBudgetUsd, alerts the topic at 80 % and 100 % of the actual cost, and counts this project only', () => {
    template.resourceCountIs('AWS::Budgets::Budget', 0);
    const budgeted = new PlatformStack(templateApp({ monthlyBudgetUsd: '250' }), 'Budgeted', { env: { region: 'us-east-1' } });
    const budgets = Object.values(Template.fromStack(budgeted).findResources('AWS::Budgets::Budget'));
    expect(budgets).toHaveLength(1);
    const properties = budgets[0]!.Properties as Record<string, any>;
    expect(properties.Budget).toMatchObject({
      BudgetType: 'COST',
      TimeUnit: 'MONTHLY',
      BudgetLimit: { Amount: 250, Unit: 'USD' },
      CostFilters: { TagKeyValue: ['user:Project$workflow-ingest'] },
    });
    expect(
      properties.NotificationsWithSubscribers.map((entry: any) => [entry.Notification.Threshold, entry.Notification.NotificationType]),
    ).toEqual([
      [80, 'ACTUAL'],
      [100, 'ACTUAL'],
    ]);
    expect(JSON.stringify(properties.NotificationsWithSubscribers)).toContain(
      budgeted.getLogicalId(budgeted.operations.topic.node.defaultChild as never),
    );
    expect(() => new PlatformStack(templateApp({ monthlyBudgetUsd: 'lots' }), 'Bad', { env: { region: 'us-east-1' } })).toThrow(
      /monthlyBudgetUsd must be a number/,
    );
  });
});
