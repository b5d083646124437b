/*
 * The alarm topic's resource policy, a fact the twin mirrors: CDK writes these statements into the stack's
 * AWS::SNS::TopicPolicy (constructs/operations.ts), and the twin's SNS stand-in evaluates the same statements when its
 * CloudWatch stand-in performs an alarm's action (lib/twin/sns-stand-in.ts).
 */

export const CLOUDWATCH_SERVICE_PRINCIPAL = 'cloudwatch.amazonaws.com';
export const BUDGETS_SERVICE_PRINCIPAL = 'budgets.amazonaws.com';

/** One statement of a resource policy, as CloudFormation takes it (every string may be a CDK token). */
export interface ResourcePolicyStatement {
  readonly Sid: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Principal: '*' | { readonly Service: string };
  readonly Action: string;
  readonly Resource: string;
  readonly Condition: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

/** Where the topic lives: its ARN, and the stack whose alarms may publish to it. */
export interface AlarmTopicPlace {
  readonly partition: string;
  readonly region: string;
  readonly account: string;
  readonly stackName: string;
  readonly topicArn: string;
}

/**
 * What every alarm name of a stack starts with. The stack's alarms have no AlarmName, so CloudFormation names each
 * `<stack name>-<logical id>-<random suffix>` (a name given now would replace every alarm).
 */
export const alarmNamePrefix = (stackName: string) => `${stackName}-`;

/** The ARN of every alarm of the stack, as `aws:SourceArn` carries an alarm's when CloudWatch publishes its action. */
const stackAlarmsArnPattern = (where: Omit<AlarmTopicPlace, 'topicArn'>) =>
  `arn:${where.partition}:cloudwatch:${where.region}:${where.account}:alarm:${alarmNamePrefix(where.stackName)}*`;

/**
 * The topic policy. A topic policy replaces SNS's default one, so each service that publishes needs its own
 * statement: Budgets for the budget's alerts, CloudWatch for the alarms' actions (without it every alarm action fails
 * with "... is not authorized to perform: SNS:Publish", seen only in the alarm's history). Each service is held to
 * this account (`aws:SourceAccount`), CloudWatch also to this stack's alarms (`aws:SourceArn`), so another account's
 * alarm or budget cannot use the topic through the service (the confused deputy). Publishing without TLS is denied
 * to everyone.
 */
export function alarmTopicPolicyStatements(where: AlarmTopicPlace): ResourcePolicyStatement[] {
  const thisAccount = { 'aws:SourceAccount': where.account };
  return [
    {
      Sid: 'AllowPublishThroughSSLOnly',
      Effect: 'Deny',
      Principal: '*',
      Action: 'sns:Publish',
      Resource: where.topicArn,
      Condition: { Bool: { 'aws:SecureTransport': 'false' } },
    },
    {
      Sid: 'BudgetAlerts',
      Effect: 'Allow',
      Principal: { Service: BUDGETS_SERVICE_PRINCIPAL },
      Action: 'sns:Publish',
      Resource: where.topicArn,
      Condition: { StringEquals: thisAccount },
    },
    {
      Sid: 'StackAlarmActions',
      Effect: 'Allow',
      Principal: { Service: CLOUDWATCH_SERVICE_PRINCIPAL },
      Action: 'sns:Publish',
      Resource: where.topicArn,
      Condition: { StringEquals: thisAccount, ArnLike: { 'aws:SourceArn': stackAlarmsArnPattern(where) } },
    },
  ];
}
