import { CloudWatchClient, DescribeAlarmHistoryCommand, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { CHECK_NAMES } from '#lib/admin/verify-check.ts';
import { localAlarmArn } from '#lib/twin/local-alarms.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/local-names.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * `admin verify --alarms` against a twin whose alarm topic policy lacks CloudWatch's statement, as the stack's did: a
 * topic policy replaces SNS's default one, so every alarm action is refused, and only the alarm's history says so
 * ("Failed to execute action ... Received error: "Resource: arn:aws:cloudwatch:...:alarm:ALARM_NAME is not authorized
 * to perform: SNS:Publish on resource: ..."", repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger). The
 * twin that works passes it in admin-verify.test.ts.
 */
const VERIFY_TIMEOUT_MS = 240_000;

interface Report {
  passed: boolean;
  cleaned_up: string[];
  checks: ({ check: string; status: string; detail: string } & Record<string, any>)[];
}

describe('admin verify --alarms against a topic policy without CloudWatch', () => {
  let twin: TestTwin;
  let cloudWatch: CloudWatchClient;
  beforeAll(async () => {
    twin = await startTestTwin({
      alarmTopicPolicy: (statements) =>
        statements.filter((statement) => statement.Principal === '*' || statement.Principal.Service !== 'cloudwatch.amazonaws.com'),
    });
    cloudWatch = new CloudWatchClient({ endpoint: twin.twin.cloudwatch_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  });
  afterAll(async () => {
    cloudWatch?.destroy();
    await twin?.close();
  });

  it(
    "fails the alarms check with CloudWatch's refusal and the fix, publishes nothing, and sets the alarm back to OK",
    async () => {
      process.env.DATA_DIR = twin.dataDir;
      const result = await runCli(['verify', '--alarms', '--skip-models', '--json']);
      const report = JSON.parse(result.stdout) as Report;

      expect(result.exitCode).toBe(1);
      expect(report.passed).toBe(false);
      expect(report.checks.map((check) => check.check)).toEqual([...CHECK_NAMES]);
      const failed = report.checks.filter((check) => check.status === 'fail').map((check) => check.check);
      expect(failed).toEqual(['alarms']);
      const alarms = report.checks.find((check) => check.check === 'alarms')!;
      const topic = twin.alarmTopic.arn;
      const refusal =
        `Failed to execute action ${topic}. Received error: "Resource: ${localAlarmArn(alarms.alarm)} is not authorized to perform: ` +
        `SNS:Publish on resource: ${topic}"`;
      expect(alarms).toMatchObject({ topic, history: refusal });
      expect(alarms.detail).toBe(
        `expected CloudWatch to publish ${alarms.alarm}'s action to ${topic}; got "${refusal}" in the alarm's history. The alarm ` +
          "topic's policy must allow cloudwatch.amazonaws.com sns:Publish for this stack's alarms (aws:SourceArn " +
          'arn:<partition>:cloudwatch:<region>:<account>:alarm:local-*, aws:SourceAccount this account): deploy this version of the ' +
          'stack (npx cdk deploy), whose topic policy has that statement, then verify --alarms again',
      );
      expect(twin.alarmTopic.published).toEqual([]);

      // The failure did not keep the alarm in ALARM: the cleanup set it back, and says so.
      expect(report.cleaned_up).toContain(`alarm ${alarms.alarm} (set back to OK)`);
      const { MetricAlarms } = await cloudWatch.send(new DescribeAlarmsCommand({ AlarmNames: [alarms.alarm] }));
      expect(MetricAlarms?.[0]).toMatchObject({
        StateValue: 'OK',
        StateReason: expect.stringMatching(/^admin verify [0-9a-f]+: set back to OK/),
      });
      const { AlarmHistoryItems } = await cloudWatch.send(
        new DescribeAlarmHistoryCommand({ AlarmName: alarms.alarm, HistoryItemType: 'StateUpdate', ScanBy: 'TimestampAscending' }),
      );
      expect(AlarmHistoryItems?.map((item) => item.HistorySummary)).toEqual([
        'Alarm updated from OK to ALARM',
        'Alarm updated from ALARM to OK',
      ]);
    },
    VERIFY_TIMEOUT_MS,
  );
});
