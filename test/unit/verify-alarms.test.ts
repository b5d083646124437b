import type { AlarmHistoryItem } from '@aws-sdk/client-cloudwatch';
import { describe, expect, it } from 'vitest';
import { actionOutcome } from '#lib/admin/verify-alarms.ts';

/**
 * How `admin verify --alarms` reads an alarm's history after setting it to ALARM: the Action items from its own state
 * change on, worded as CloudWatch words them ("Successfully executed action <arn>", "Failed to execute action <arn>.
 * Received error: ...", repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger), newest first.
 */
const TOPIC = 'arn:aws:sns:us-east-1:111122223333:Ops-OperationsAlarmTopic909EF7A3-ABC';
const REASON = 'admin verify 0a1b2c3d: checks that this alarm reaches the alarm topic';
const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second));

const stateUpdate = (second: number, reason: string): AlarmHistoryItem => ({
  HistoryItemType: 'StateUpdate',
  Timestamp: at(second),
  HistorySummary: 'Alarm updated from OK to ALARM',
  HistoryData: JSON.stringify({ version: '1.0', oldState: { stateValue: 'OK' }, newState: { stateValue: 'ALARM', stateReason: reason } }),
});
const action = (second: number, succeeded: boolean): AlarmHistoryItem => ({
  HistoryItemType: 'Action',
  Timestamp: at(second),
  HistorySummary: succeeded
    ? `Successfully executed action ${TOPIC}`
    : `Failed to execute action ${TOPIC}. Received error: "Resource: arn:aws:cloudwatch:us-east-1:111122223333:alarm:Ops-X is not ` +
      `authorized to perform: SNS:Publish on resource: ${TOPIC}"`,
  HistoryData: JSON.stringify({ actionState: succeeded ? 'Succeeded' : 'Failed', notificationResource: TOPIC }),
});

describe('the outcome of the alarm action verify caused', () => {
  it('is pending until its own state change is in the history, and then until an action follows it', () => {
    expect(actionOutcome([], REASON)).toEqual({ state: 'pending', stateUpdated: false });
    // An earlier change's successful action says nothing of this one.
    expect(actionOutcome([stateUpdate(5, 'Threshold Crossed'), action(6, true)], REASON)).toEqual({
      state: 'pending',
      stateUpdated: false,
    });
    expect(actionOutcome([stateUpdate(10, REASON), action(6, true), stateUpdate(5, 'Threshold Crossed')], REASON)).toEqual({
      state: 'pending',
      stateUpdated: true,
    });
  });

  it("passes on CloudWatch's success and fails on its refusal, naming the summary", () => {
    expect(actionOutcome([action(11, true), stateUpdate(10, REASON)], REASON)).toEqual({
      state: 'succeeded',
      summary: `Successfully executed action ${TOPIC}`,
    });
    const refused = actionOutcome([action(11, false), stateUpdate(10, REASON)], REASON);
    expect(refused).toMatchObject({ state: 'failed', summary: expect.stringMatching(/^Failed to execute action .+ SNS:Publish/) });
  });

  it('fails when any action of the change failed, and reads the summary when the data says nothing', () => {
    expect(actionOutcome([action(12, true), action(11, false), stateUpdate(10, REASON)], REASON).state).toBe('failed');
    const withoutData = { ...action(11, false), HistoryData: undefined };
    expect(actionOutcome([withoutData, stateUpdate(10, REASON)], REASON).state).toBe('failed');
  });
});
