import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CloudWatchClient,
  DescribeAlarmHistoryCommand,
  DescribeAlarmsCommand,
  SetAlarmStateCommand,
  type AlarmHistoryItem,
} from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskFunctions } from '#functions/task-functions.ts';
import { alarmTopicPolicyStatements } from '#lib/cdk/alarm-topic-policy.ts';
import { startCloudWatchStandIn, type CloudWatchStandIn } from '#lib/twin/cloudwatch-stand-in.ts';
import { LOCAL_ACCOUNT } from '#lib/twin/local-arns.ts';
import { LOCAL_ALARM_TOPIC_ARN, localAlarmArn, localAlarms, type LocalAlarm } from '#lib/twin/local-alarms.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, LOCAL_STACK_NAME } from '#lib/twin/local-names.ts';
import { createLocalTopic, type LocalTopic } from '#lib/twin/sns-stand-in.ts';
import { readLiveTwinFile } from '#lib/twin/twin-file.ts';
import { startLocalTwin, type LocalTwin } from '#lib/twin/twin.ts';

/**
 * The twin's CloudWatch alarms and alarm topic, through the real SDK client. SetAlarmState: "When the updated state
 * differs from the previous value, the action configured for the appropriate state is invoked"
 * (docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_SetAlarmState.html). CloudWatch publishes the action as
 * `cloudwatch.amazonaws.com` for the alarm, which the topic policy may refuse; the alarm's history then says "Failed to
 * execute action arn:aws:sns:...:TOPIC_NAME. Received error: "Resource: arn:aws:cloudwatch:...:alarm:ALARM_NAME is not
 * authorized to perform: SNS:Publish on resource: arn:aws:sns:...:TOPIC_NAME""
 * (repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger).
 */
const client = (endpoint: string, credentials = LOCAL_CREDENTIALS) =>
  new CloudWatchClient({ endpoint, region: LOCAL_REGION, credentials, maxAttempts: 1 });
const failure = (sent: Promise<unknown>) =>
  sent.then(
    () => {
      throw new Error('the call was answered, not refused');
    },
    (error: Error & { $metadata?: { httpStatusCode?: number } }) => error,
  );
const policy = alarmTopicPolicyStatements({
  partition: 'aws',
  region: LOCAL_REGION,
  account: LOCAL_ACCOUNT,
  stackName: LOCAL_STACK_NAME,
  topicArn: LOCAL_ALARM_TOPIC_ARN,
});

describe("the CloudWatch stand-in and the alarm topic's policy", () => {
  const [stackAlarm] = localAlarms(['WebhookPing']);
  /** An alarm of another stack of the account that names the same topic: the policy holds CloudWatch to this stack's alarms. */
  const otherStackAlarm: LocalAlarm = { ...stackAlarm!, name: 'other-OperationsErrorsWebhookPing-0123456789AB' };
  let topic: LocalTopic;
  let standIn: CloudWatchStandIn;
  let cloudWatch: CloudWatchClient;
  const history = async (alarmName: string, type?: 'StateUpdate' | 'Action'): Promise<AlarmHistoryItem[]> => {
    await standIn.settled();
    const { AlarmHistoryItems } = await cloudWatch.send(new DescribeAlarmHistoryCommand({ AlarmName: alarmName, HistoryItemType: type }));
    return AlarmHistoryItems ?? [];
  };
  const stateOf = async (alarmName: string) =>
    (await cloudWatch.send(new DescribeAlarmsCommand({ AlarmNames: [alarmName] }))).MetricAlarms?.[0]?.StateValue;

  beforeAll(async () => {
    topic = createLocalTopic({ arn: LOCAL_ALARM_TOPIC_ARN, policy });
    standIn = await startCloudWatchStandIn({ alarms: [stackAlarm!, otherStackAlarm], topics: [topic] });
    cloudWatch = client(standIn.endpoint);
  });
  afterAll(async () => {
    cloudWatch?.destroy();
    await standIn?.close();
  });

  it("publishes the action of this stack's alarm entering ALARM, once, and records that it succeeded", async () => {
    expect(await stateOf(stackAlarm!.name)).toBe('OK');
    await cloudWatch.send(new SetAlarmStateCommand({ AlarmName: stackAlarm!.name, StateValue: 'ALARM', StateReason: 'testing' }));
    // Already in ALARM: no change, no second action.
    await cloudWatch.send(new SetAlarmStateCommand({ AlarmName: stackAlarm!.name, StateValue: 'ALARM', StateReason: 'again' }));

    expect(await stateOf(stackAlarm!.name)).toBe('ALARM');
    const actions = await history(stackAlarm!.name, 'Action');
    expect(actions.map((item) => item.HistorySummary)).toEqual([`Successfully executed action ${LOCAL_ALARM_TOPIC_ARN}`]);
    expect(JSON.parse(actions[0]!.HistoryData!)).toMatchObject({ actionState: 'Succeeded', notificationResource: LOCAL_ALARM_TOPIC_ARN });
    expect(topic.published).toHaveLength(1);
    expect(topic.published[0]).toMatchObject({ publisher: 'cloudwatch.amazonaws.com' });
    expect(JSON.parse(topic.published[0]!.message)).toMatchObject({
      AlarmName: stackAlarm!.name,
      AlarmArn: localAlarmArn(stackAlarm!.name),
      NewStateValue: 'ALARM',
      NewStateReason: 'testing',
      OldStateValue: 'OK',
    });
    const [update] = await history(stackAlarm!.name, 'StateUpdate');
    expect(update!.HistorySummary).toBe('Alarm updated from OK to ALARM');
    expect(JSON.parse(update!.HistoryData!)).toMatchObject({
      oldState: { stateValue: 'OK' },
      newState: { stateValue: 'ALARM', stateReason: 'testing' },
    });

    // Back to OK: the alarms have no OK action, so nothing more is published.
    await cloudWatch.send(new SetAlarmStateCommand({ AlarmName: stackAlarm!.name, StateValue: 'OK', StateReason: 'done' }));
    expect(await history(stackAlarm!.name, 'Action')).toHaveLength(1);
    expect(topic.published).toHaveLength(1);
  });

  it("refuses the action of another stack's alarm, in CloudWatch's words, and publishes nothing", async () => {
    const before = topic.published.length;
    await cloudWatch.send(new SetAlarmStateCommand({ AlarmName: otherStackAlarm.name, StateValue: 'ALARM', StateReason: 'testing' }));

    const [action, ...more] = await history(otherStackAlarm.name, 'Action');
    expect(more).toEqual([]);
    expect(action!.HistorySummary).toBe(
      `Failed to execute action ${LOCAL_ALARM_TOPIC_ARN}. Received error: "Resource: ${localAlarmArn(otherStackAlarm.name)} is not ` +
        `authorized to perform: SNS:Publish on resource: ${LOCAL_ALARM_TOPIC_ARN}"`,
    );
    expect(JSON.parse(action!.HistoryData!)).toMatchObject({ actionState: 'Failed' });
    expect(topic.published).toHaveLength(before);
  });

  it('answers what CloudWatch answers to a bad request', async () => {
    const missing = await failure(
      cloudWatch.send(new SetAlarmStateCommand({ AlarmName: 'no-such-alarm', StateValue: 'ALARM', StateReason: 'x' })),
    );
    expect(missing).toMatchObject({ name: 'ResourceNotFound', $metadata: { httpStatusCode: 404 } });
    const badState = await failure(
      cloudWatch.send(new SetAlarmStateCommand({ AlarmName: stackAlarm!.name, StateValue: 'RED' as 'OK', StateReason: 'x' })),
    );
    expect(badState).toMatchObject({ name: 'ValidationException', Code: 'ValidationError', $metadata: { httpStatusCode: 400 } });
    expect(badState.message).toContain('Member must satisfy enum value set: [OK, ALARM, INSUFFICIENT_DATA]');
    const badData = await failure(
      cloudWatch.send(
        new SetAlarmStateCommand({ AlarmName: stackAlarm!.name, StateValue: 'OK', StateReason: 'x', StateReasonData: '{not json' }),
      ),
    );
    expect(badData).toMatchObject({ name: 'InvalidFormatFault', $metadata: { httpStatusCode: 400 } });
    const tooLong = await failure(
      cloudWatch.send(new SetAlarmStateCommand({ AlarmName: stackAlarm!.name, StateValue: 'OK', StateReason: 'x'.repeat(1024) })),
    );
    expect(tooLong.message).toContain("at 'stateReason' failed to satisfy constraint: Member must have length less than or equal to 1023");
    const both = await failure(cloudWatch.send(new DescribeAlarmsCommand({ AlarmNames: [stackAlarm!.name], AlarmNamePrefix: 'x' })));
    expect(both).toMatchObject({ name: 'InvalidParameterCombinationException', $metadata: { httpStatusCode: 400 } });
    const tooMany = await failure(cloudWatch.send(new DescribeAlarmsCommand({ MaxRecords: 101 })));
    expect(tooMany.message).toContain('Member must have value less than or equal to 100');
  });

  it('lists alarms by name prefix, page by page', async () => {
    const first = await cloudWatch.send(new DescribeAlarmsCommand({ MaxRecords: 1 }));
    const second = await cloudWatch.send(new DescribeAlarmsCommand({ MaxRecords: 1, NextToken: first.NextToken }));
    expect([...first.MetricAlarms!, ...second.MetricAlarms!].map((alarm) => alarm.AlarmName)).toEqual(
      [stackAlarm!.name, otherStackAlarm.name].sort(),
    );
    expect(second.NextToken).toBeUndefined();
    const own = await cloudWatch.send(new DescribeAlarmsCommand({ AlarmNamePrefix: `${LOCAL_STACK_NAME}-` }));
    expect(own.MetricAlarms!.map((alarm) => alarm.AlarmName)).toEqual([stackAlarm!.name]);
    expect(own.MetricAlarms![0]).toMatchObject({ ActionsEnabled: true, AlarmActions: [LOCAL_ALARM_TOPIC_ARN], StateValue: 'OK' });
  });
});

describe("the twin's CloudWatch front door", () => {
  let dataDir: string;
  let twin: LocalTwin;
  let endpoint: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'twin-cloudwatch-'));
    twin = await startLocalTwin({ dataDir, host: '127.0.0.1', port: 0 });
    endpoint = readLiveTwinFile(dataDir)!.cloudwatch_endpoint;
  });
  afterAll(async () => {
    await twin?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("serves the operator one errors alarm per function, each named with the stack's prefix and notifying the alarm topic", async () => {
    const operator = client(endpoint);
    const { MetricAlarms } = await operator.send(new DescribeAlarmsCommand({ AlarmNamePrefix: `${LOCAL_STACK_NAME}-`, MaxRecords: 100 }));
    operator.destroy();

    const step = taskFunctions.find((task) => task.invokesBedrock)!.id;
    expect(MetricAlarms!.map((alarm) => alarm.AlarmName)).toContain(localAlarms([step])[0]!.name);
    for (const alarm of MetricAlarms!) expect(alarm).toMatchObject({ AlarmActions: [LOCAL_ALARM_TOPIC_ARN], StateValue: 'OK' });
  });

  it("refuses a function's key every CloudWatch action: no role CDK writes grants one", async () => {
    const step = taskFunctions.find((task) => task.invokesBedrock)!.id;
    const asFunction = client(endpoint, twin.credentialsOf(step));
    const alarmName = localAlarms([step])[0]!.name;
    const refused = await failure(
      asFunction.send(new SetAlarmStateCommand({ AlarmName: alarmName, StateValue: 'ALARM', StateReason: 'x' })),
    );
    asFunction.destroy();

    expect(refused).toMatchObject({ name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 } });
    expect(twin.accessDenials).toContainEqual({ principal: step, action: 'cloudwatch:SetAlarmState', resource: localAlarmArn(alarmName) });
    expect(twin.alarmTopic.published).toEqual([]);
  });
});
