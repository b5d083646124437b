import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { LEAN_ALARM_METRICS } from '#lib/cdk/constructs/operations.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';
import { OPERATIONS_MODE_OUTPUT } from '#lib/cdk/stack-outputs.ts';
import { alarmMetricCount } from '#lib/pricing/fixed-costs.ts';

/**
 * `-c operations=lean`: the deployment an operator runs when the fixed monthly cost matters more than the dashboard
 * and the alarms that only say something is slow or failing loudly anyway. What it keeps must still tell someone that
 * accepted conversations are not reaching the analysis, and the price the README quotes must be this template's.
 */
const templateApp = (context: Record<string, unknown> = {}) =>
  new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], ...context } });
const synth = (context: Record<string, unknown>, id: string) =>
  Template.fromStack(new PlatformStack(templateApp(context), id, { env: { region: 'us-east-1' } }));

type Alarm = { MetricName?: string; Metrics?: { MetricStat?: unknown }[]; AlarmActions?: unknown[] };
const alarmsOf = (template: Template) =>
  Object.entries(template.findResources('AWS::CloudWatch::Alarm')).map(([logicalId, alarm]) => ({
    logicalId,
    properties: alarm.Properties as Alarm,
  }));
/** An alarm is billed per metric it reads: a metric-math alarm per metric inside it. */
const metricsRead = (template: Template) =>
  alarmsOf(template).reduce(
    (sum, { properties }) => sum + (properties.MetricName ? 1 : (properties.Metrics ?? []).filter((metric) => metric.MetricStat).length),
    0,
  );

let full: Template;
let lean: Template;
beforeAll(() => {
  full = synth({}, 'Full');
  lean = synth({ operations: 'lean', monthlyBudgetUsd: '50', alarmEmail: 'oncall@example.com' }, 'Lean');
});

describe('operations=full (the default)', () => {
  it('has the dashboard and every alarm the pricing counts', () => {
    full.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    expect(metricsRead(full)).toBe(alarmMetricCount('full'));
    expect(alarmsOf(full).length).toBeGreaterThan(Object.keys(LEAN_ALARM_METRICS).length);
  });

  it('names its mode in the OperationsMode output, which the admin CLI prices the fixed items by', () => {
    full.hasOutput(OPERATIONS_MODE_OUTPUT, { Value: 'full' });
    lean.hasOutput(OPERATIONS_MODE_OUTPUT, { Value: 'lean' });
  });

  it('is what -c operations=full synthesizes', () => {
    expect(synth({ operations: 'full' }, 'Full').toJSON()).toEqual(full.toJSON());
  });
});

describe('operations=lean', () => {
  it('has no dashboard and only the nightly collection alarms, each reading the metrics the pricing counts', () => {
    lean.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    const ids = alarmsOf(lean).map(({ logicalId }) => logicalId.replace(/^Operations/, '').replace(/[0-9A-F]{8}$/, ''));
    expect(ids.sort()).toEqual(Object.keys(LEAN_ALARM_METRICS).sort());
    expect(metricsRead(lean)).toBe(alarmMetricCount('lean'));
  });

  it('keeps what tells someone: the encrypted topic the alarms notify, its subscription, the budget and the dead-letter queue', () => {
    lean.resourceCountIs('AWS::KMS::Key', 1);
    lean.resourceCountIs('AWS::SNS::Topic', 1);
    lean.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
    lean.resourceCountIs('AWS::Budgets::Budget', 1);
    expect(Object.keys(lean.findResources('AWS::SQS::Queue'))).toHaveLength(Object.keys(full.findResources('AWS::SQS::Queue')).length);
    expect(Object.keys(lean.findResources('AWS::SQS::Queue')).length).toBeGreaterThan(0);
    const topic = Object.keys(lean.findResources('AWS::SNS::Topic'))[0]!;
    for (const { properties } of alarmsOf(lean)) expect(properties.AlarmActions).toEqual([{ Ref: topic }]);
  });

  it('changes nothing but the operations resources', () => {
    const others = (template: Template) =>
      Object.values(template.toJSON().Resources as Record<string, { Type: string }>)
        .map((resource) => resource.Type)
        .filter((type) => type !== 'AWS::CloudWatch::Alarm' && type !== 'AWS::CloudWatch::Dashboard')
        .sort();
    expect(others(synth({ operations: 'lean' }, 'Full'))).toEqual(others(full));
  });
});

describe('a bad operations value', () => {
  it.each(['leen', '', 'LEAN', true])('fails the synthesis, naming the setting: %j', (value) => {
    expect(() => synth({ operations: value }, 'Bad')).toThrow(/CDK context operations must be "full" or "lean", got /);
  });
});
