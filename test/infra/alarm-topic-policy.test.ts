import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { PlatformStack } from '#lib/cdk/stack.ts';
import { evaluateResourcePolicy, type Caller } from '#lib/twin/iam/resource-policy.ts';

/**
 * The alarm topic's policy as deployed, evaluated rather than read: a topic policy replaces SNS's default one, and
 * CloudWatch publishes an alarm's action as `cloudwatch.amazonaws.com` for the alarm's ARN (`aws:SourceArn`) and
 * account (`aws:SourceAccount`). Without a statement allowing it, the action fails and only the alarm's history says
 * so: "Failed to execute action arn:aws:sns:...:TOPIC_NAME. Received error: "Resource: arn:aws:cloudwatch:...:alarm:
 * ALARM_NAME is not authorized to perform: SNS:Publish on resource: ..."" (repost.aws/knowledge-center/
 * cloudwatch-receive-sns-for-alarm-trigger, which restricts the statement to alarms with ArnLike on aws:SourceArn).
 * IAM's evaluation: an explicit Deny wins, then an Allow, else denied (docs.aws.amazon.com/IAM/latest/UserGuide/
 * reference_policies_evaluation-logic.html).
 */
const STACK = 'Ops';
const ACCOUNT = '111122223333';
const OTHER_ACCOUNT = '444455556666';
const REGION = 'us-east-1';

type Resource = { Type: string; Properties: Record<string, any> };
let resources: Record<string, Resource>;
let topicArn: string;
let policy: { Statement: unknown[] };
/** A name CloudFormation gives an alarm of the stack that names none: `<stack>-<logical id>-<random suffix>`. */
let stackAlarmName: string;

/** What the template's intrinsics resolve to in an account: pseudo parameters, Ref, Fn::GetAtt and Fn::Join. */
function resolve(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(resolve);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  const [key, argument] = entries.length === 1 ? entries[0]! : ['', undefined];
  if (key === 'Ref') return refOf(argument as string);
  if (key === 'Fn::GetAtt') return attributeOf(argument as [string, string]);
  if (key === 'Fn::Join') {
    const [separator, parts] = argument as [string, unknown[]];
    return (parts.map(resolve) as string[]).join(separator);
  }
  return Object.fromEntries(entries.map(([name, inner]) => [name, resolve(inner)]));
}

function refOf(name: string): string {
  const pseudo: Record<string, string> = {
    'AWS::AccountId': ACCOUNT,
    'AWS::Partition': 'aws',
    'AWS::Region': REGION,
    'AWS::StackName': STACK,
    'AWS::URLSuffix': 'amazonaws.com',
  };
  if (name in pseudo) return pseudo[name]!;
  const resource = resources[name];
  if (resource?.Type === 'AWS::SNS::Topic') return `arn:aws:sns:${REGION}:${ACCOUNT}:${STACK}-${name}-TOPIC0SUFFIX`;
  throw new Error(`The test resolves no Ref to ${name} (${resource?.Type})`);
}

function attributeOf([name, attribute]: [string, string]): string {
  if (resources[name]?.Type === 'AWS::SNS::Topic' && attribute === 'TopicArn') return refOf(name);
  throw new Error(`The test resolves no Fn::GetAtt ${name}.${attribute}`);
}

const alarmArn = (name: string, account = ACCOUNT) => `arn:aws:cloudwatch:${REGION}:${account}:alarm:${name}`;

/** sns:Publish to the alarm topic by `caller`, carrying `context` (over TLS unless it says otherwise). */
const publish = (caller: Caller, context: Record<string, string>) =>
  evaluateResourcePolicy(policy, {
    caller,
    action: 'sns:Publish',
    resource: topicArn,
    context: { 'aws:SecureTransport': 'true', ...context },
  });
const cloudWatch: Caller = { service: 'cloudwatch.amazonaws.com' };
const budgets: Caller = { service: 'budgets.amazonaws.com' };

beforeAll(() => {
  const app = new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new PlatformStack(app, STACK, { env: { region: REGION } });
  resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
  const [topicPolicy, ...others] = Object.values(resources).filter((resource) => resource.Type === 'AWS::SNS::TopicPolicy');
  expect(others).toEqual([]);
  const [topic] = topicPolicy!.Properties.Topics as unknown[];
  topicArn = resolve(topic) as string;
  policy = resolve(topicPolicy!.Properties.PolicyDocument) as { Statement: unknown[] };
  const alarmId = Object.keys(resources).find((id) => resources[id]!.Type === 'AWS::CloudWatch::Alarm')!;
  // Every alarm notifies this topic (operations.test.ts); one of them stands for all.
  expect(resolve(resources[alarmId]!.Properties.AlarmActions)).toEqual([topicArn]);
  expect(resources[alarmId]!.Properties.AlarmName).toBeUndefined();
  stackAlarmName = `${STACK}-${alarmId}-1A2B3C4D5E6F`;
});

describe('the alarm topic policy as deployed', () => {
  it("lets CloudWatch publish an action of this stack's alarm, in this account, over TLS", () => {
    expect(publish(cloudWatch, { 'aws:SourceArn': alarmArn(stackAlarmName), 'aws:SourceAccount': ACCOUNT })).toEqual({
      decision: 'allow',
      sid: 'StackAlarmActions',
    });
  });

  it('refuses CloudWatch for an alarm of another account, or of another stack of this account', () => {
    const otherAccount = { 'aws:SourceArn': alarmArn(stackAlarmName, OTHER_ACCOUNT), 'aws:SourceAccount': OTHER_ACCOUNT };
    expect(publish(cloudWatch, otherAccount)).toEqual({ decision: 'implicit-deny' });
    // The account alone does not do: the alarm's name must carry this stack's prefix.
    const otherStack = { 'aws:SourceArn': alarmArn(`Other-${stackAlarmName}`), 'aws:SourceAccount': ACCOUNT };
    expect(publish(cloudWatch, otherStack)).toEqual({ decision: 'implicit-deny' });
    const unnamedStack = { 'aws:SourceArn': alarmArn(stackAlarmName.slice(STACK.length + 1)), 'aws:SourceAccount': ACCOUNT };
    expect(publish(cloudWatch, unnamedStack)).toEqual({ decision: 'implicit-deny' });
    // Nor does an alarm ARN naming this account with another source account, or no source at all.
    expect(publish(cloudWatch, { 'aws:SourceArn': alarmArn(stackAlarmName), 'aws:SourceAccount': OTHER_ACCOUNT })).toEqual({
      decision: 'implicit-deny',
    });
    expect(publish(cloudWatch, {})).toEqual({ decision: 'implicit-deny' });
  });

  it("still lets Budgets publish the budget's alerts for this account, and no other", () => {
    expect(publish(budgets, { 'aws:SourceAccount': ACCOUNT })).toEqual({ decision: 'allow', sid: 'BudgetAlerts' });
    expect(publish(budgets, { 'aws:SourceAccount': OTHER_ACCOUNT })).toEqual({ decision: 'implicit-deny' });
  });

  it('denies every publish without TLS, even an alarm of this stack', () => {
    const context = { 'aws:SourceArn': alarmArn(stackAlarmName), 'aws:SourceAccount': ACCOUNT, 'aws:SecureTransport': 'false' };
    expect(publish(cloudWatch, context)).toEqual({ decision: 'explicit-deny', sid: 'AllowPublishThroughSSLOnly' });
    expect(publish(budgets, { 'aws:SourceAccount': ACCOUNT, 'aws:SecureTransport': 'false' })).toEqual({
      decision: 'explicit-deny',
      sid: 'AllowPublishThroughSSLOnly',
    });
  });

  it('allows no other principal: an identity of this account, another service', () => {
    const someone = { account: ACCOUNT, arn: `arn:aws:iam::${ACCOUNT}:user/someone` };
    expect(publish(someone, {})).toEqual({ decision: 'implicit-deny' });
    const events = { service: 'events.amazonaws.com' };
    expect(publish(events, { 'aws:SourceArn': alarmArn(stackAlarmName), 'aws:SourceAccount': ACCOUNT })).toEqual({
      decision: 'implicit-deny',
    });
  });
});
