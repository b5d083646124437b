import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AlarmHistoryItem, CloudWatchClient, MetricAlarm, StateValue } from '@aws-sdk/client-cloudwatch';
import { CLOUDWATCH_SERVICE_PRINCIPAL } from '#lib/cdk/alarm-topic-policy.ts';
import {
  ALARM_ACTION_DEADLINE_MS,
  ALARM_CLOCK_SKEW_MS,
  ALARM_HISTORY_POLL_MS,
  CheckFailure,
  shortText,
  type CheckOutcome,
  type VerifyCheck,
} from './verify-check.ts';

/** Why the check runs only when asked: its notification reaches real people. */
export const ALARMS_SKIPPED =
  "not run: it sets one of the stack's alarms to ALARM, which notifies everyone subscribed to the alarm topic; " +
  'run verify --alarms to check that the alarms reach the topic';

const PERMISSIONS = 'cloudwatch:DescribeAlarms, cloudwatch:SetAlarmState and cloudwatch:DescribeAlarmHistory';
const isTopic = (action: string) => /^arn:[^:]+:sns:/.test(action);

/** What the alarm's history says of the state change the check made (the StateUpdate item carrying its `reason`). */
export type ActionOutcome =
  /** CloudWatch has not run the change's action yet (or the change is not in the history yet). */
  { state: 'pending'; stateUpdated: boolean } | { state: 'succeeded'; summary: string } | { state: 'failed'; summary: string };

/**
 * Reads the outcome of the change's action from the alarm's history: its Action items from the StateUpdate item of
 * the change on. CloudWatch words them "Successfully executed action <arn>" and "Failed to execute action <arn>.
 * Received error: ..." (repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger); `actionState` in the
 * item's data says the same. One failed action fails it.
 */
export function actionOutcome(items: readonly AlarmHistoryItem[], reason: string): ActionOutcome {
  const update = items.find((item) => item.HistoryItemType === 'StateUpdate' && newStateReason(item) === reason);
  if (!update?.Timestamp) return { state: 'pending', stateUpdated: false };
  const actions = items.filter(
    (item) => item.HistoryItemType === 'Action' && item.Timestamp !== undefined && item.Timestamp >= update.Timestamp!,
  );
  const failed = actions.find((item) => actionState(item) === 'Failed');
  if (failed) return { state: 'failed', summary: failed.HistorySummary ?? '(no summary)' };
  const succeeded = actions.find((item) => actionState(item) === 'Succeeded');
  if (succeeded) return { state: 'succeeded', summary: succeeded.HistorySummary ?? '(no summary)' };
  return { state: 'pending', stateUpdated: true };
}

function historyData(item: AlarmHistoryItem): Record<string, unknown> {
  try {
    const data = JSON.parse(item.HistoryData ?? '{}') as unknown;
    return typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
const newStateReason = (item: AlarmHistoryItem) => (historyData(item).newState as { stateReason?: unknown } | undefined)?.stateReason;
function actionState(item: AlarmHistoryItem): 'Succeeded' | 'Failed' | undefined {
  const state = historyData(item).actionState;
  if (state === 'Succeeded' || state === 'Failed') return state;
  if (item.HistorySummary?.startsWith('Successfully executed action')) return 'Succeeded';
  if (item.HistorySummary?.startsWith('Failed to execute action')) return 'Failed';
  return undefined;
}

/** What to do about a failed action, from CloudWatch's words for it. */
function fixFor(summary: string, namePrefix: string): string {
  if (/kms/i.test(summary))
    return (
      `The alarm topic's key policy must let ${CLOUDWATCH_SERVICE_PRINCIPAL} use its key (kms:Decrypt, kms:GenerateDataKey*): ` +
      'deploy this version of the stack (npx cdk deploy), whose key policy allows it, then verify --alarms again'
    );
  return (
    `The alarm topic's policy must allow ${CLOUDWATCH_SERVICE_PRINCIPAL} sns:Publish for this stack's alarms (aws:SourceArn ` +
    `arn:<partition>:cloudwatch:<region>:<account>:alarm:${namePrefix}*, aws:SourceAccount this account): deploy this version of ` +
    'the stack (npx cdk deploy), whose topic policy has that statement, then verify --alarms again'
  );
}

/**
 * `alarms` (only with `--alarms`): whether an alarm's action reaches the alarm topic. A topic policy replaces SNS's
 * default one, and an action it refuses fails silently but for a line in the alarm's history. The check sets one of
 * the stack's alarms (one not in ALARM, with an SNS action) to ALARM with a reason naming admin verify, which runs the
 * alarm's action, as a real alarm would; reads the alarm's history until CloudWatch records the action's outcome; and
 * sets the alarm back to the state it had, unless CloudWatch has already re-evaluated it (or it has since gone to
 * ALARM for a real reason).
 */
export const alarmsCheck: VerifyCheck = {
  name: 'alarms',
  async run(context): Promise<CheckOutcome> {
    const { DescribeAlarmHistoryCommand, SetAlarmStateCommand } = await import('@aws-sdk/client-cloudwatch');
    const { namePrefix } = context.services.alarms;
    const cloudWatch = await context.services.alarms.cloudWatch();
    const call = <T>(operation: string, send: () => Promise<T>) =>
      send().catch((error: unknown) => {
        if (context.signal.aborted) throw context.signal.reason;
        throw new CheckFailure(
          `CloudWatch to answer ${operation}`,
          `${(error as Error).name}: ${shortText((error as Error).message)}`,
          `Run verify --alarms with credentials allowed ${PERMISSIONS} on the stack's alarms`,
        );
      });

    const alarms = await call('DescribeAlarms', () => stackAlarmsOf(cloudWatch, namePrefix, context.signal));
    const notifying = alarms.filter((alarm) => alarm.ActionsEnabled !== false && (alarm.AlarmActions ?? []).some(isTopic));
    if (notifying.length === 0)
      throw new CheckFailure(
        `alarms named ${namePrefix}* with an SNS action`,
        alarms.length === 0 ? 'none' : `${alarms.length}, none with an enabled SNS action`,
        "Deploy this version of the stack (npx cdk deploy), whose alarms notify its alarm topic; with --stack, name the stack's own name",
        { alarm: null },
      );
    const alarm = notifying.find((candidate) => candidate.StateValue !== 'ALARM');
    if (!alarm)
      return {
        status: 'warn',
        detail:
          `expected an alarm of the stack not in ALARM to test with; all ${notifying.length} are in ALARM (setting ALARM again runs no ` +
          'action) -> see what they report, then verify --alarms again',
        alarm: null,
      };
    const alarmName = alarm.AlarmName!;
    const topic = alarm.AlarmActions!.find(isTopic)!;
    const prior = alarm.StateValue ?? 'OK';
    const verifyId = randomBytes(4).toString('hex');
    const reason =
      `admin verify ${verifyId}: checks that this alarm's action reaches the alarm topic. Nothing is wrong; the alarm is set back ` +
      `to ${prior} when verify ends`;
    const measured = { alarm: alarmName, topic };

    context.cleanup.add(
      `alarm ${alarmName} (set back to ${prior})`,
      () => restore(cloudWatch, alarmName, reason, prior, verifyId),
      context.target.deployed
        ? `aws cloudwatch set-alarm-state --alarm-name ${alarmName} --state-value ${prior} --state-reason "after admin verify" ` +
            `--region ${context.services.region} (CloudWatch also sets it back at its next evaluation)`
        : 'restart the twin (npm start): its alarms start OK',
    );
    context.status(`alarms: ${alarmName} set to ALARM`);
    const setAt = context.now();
    await call('SetAlarmState', () =>
      cloudWatch.send(new SetAlarmStateCommand({ AlarmName: alarmName, StateValue: 'ALARM', StateReason: reason }), {
        abortSignal: context.signal,
      }),
    );
    for (;;) {
      const { AlarmHistoryItems } = await call('DescribeAlarmHistory', () =>
        cloudWatch.send(
          new DescribeAlarmHistoryCommand({
            AlarmName: alarmName,
            StartDate: new Date(setAt - ALARM_CLOCK_SKEW_MS),
            ScanBy: 'TimestampDescending',
            MaxRecords: 100,
          }),
          { abortSignal: context.signal },
        ),
      );
      const outcome = actionOutcome(AlarmHistoryItems ?? [], reason);
      if (outcome.state === 'succeeded')
        return {
          status: 'pass',
          detail:
            `${alarmName} set to ALARM: CloudWatch published its action to ${topic} ("${outcome.summary}"); the topic's ` +
            'subscribers got a notification naming admin verify',
          ...measured,
          history: outcome.summary,
        };
      if (outcome.state === 'failed')
        throw new CheckFailure(
          `CloudWatch to publish ${alarmName}'s action to ${topic}`,
          `"${outcome.summary}" in the alarm's history`,
          fixFor(outcome.summary, namePrefix),
          { ...measured, history: outcome.summary },
        );
      if (context.now() - setAt >= ALARM_ACTION_DEADLINE_MS)
        throw new CheckFailure(
          `an Action item in ${alarmName}'s history within ${ALARM_ACTION_DEADLINE_MS / 1000} s of setting it to ALARM`,
          outcome.stateUpdated ? 'the state change, but no action' : 'not even the state change',
          "Look at the alarm's history in the CloudWatch console (Alarms, History), then verify --alarms again",
          { ...measured, history: null },
        );
      await sleep(ALARM_HISTORY_POLL_MS, undefined, { signal: context.signal });
    }
  },
};

/** Every alarm of the stack (DescribeAlarms by name prefix, page by page). */
async function stackAlarmsOf(cloudWatch: CloudWatchClient, namePrefix: string, signal: AbortSignal): Promise<MetricAlarm[]> {
  const { DescribeAlarmsCommand } = await import('@aws-sdk/client-cloudwatch');
  const alarms: MetricAlarm[] = [];
  let NextToken: string | undefined;
  do {
    const answer = await cloudWatch.send(
      new DescribeAlarmsCommand({ AlarmNamePrefix: namePrefix, AlarmTypes: ['MetricAlarm'], MaxRecords: 100, NextToken }),
      { abortSignal: signal },
    );
    alarms.push(...(answer.MetricAlarms ?? []));
    NextToken = answer.NextToken;
  } while (NextToken);
  return alarms;
}

/**
 * Sets the alarm back to the state it had, if it is still in the ALARM the check set (false otherwise: CloudWatch
 * re-evaluated it, or it went to ALARM for a real reason since, which must stay).
 */
async function restore(
  cloudWatch: CloudWatchClient,
  alarmName: string,
  reason: string,
  prior: StateValue,
  verifyId: string,
): Promise<boolean> {
  const { DescribeAlarmsCommand, SetAlarmStateCommand } = await import('@aws-sdk/client-cloudwatch');
  const { MetricAlarms } = await cloudWatch.send(new DescribeAlarmsCommand({ AlarmNames: [alarmName] }));
  const now = MetricAlarms?.[0];
  if (now?.StateValue !== 'ALARM' || now.StateReason !== reason) return false;
  await cloudWatch.send(
    new SetAlarmStateCommand({
      AlarmName: alarmName,
      StateValue: prior,
      StateReason: `admin verify ${verifyId}: set back to ${prior} after checking that the alarm's action reaches the alarm topic`,
    }),
  );
  return true;
}
