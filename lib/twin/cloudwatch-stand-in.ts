import { CLOUDWATCH_SERVICE_PRINCIPAL } from '#lib/cdk/alarm-topic-policy.ts';
import { LOCAL_ACCOUNT } from './local-arns.ts';
import { localAlarmArn, type LocalAlarm } from './local-alarms.ts';
import { LOCAL_REGION } from './local-names.ts';
import { listenOnLoopback } from './listen.ts';
import { jsonProtocolServer } from './json-protocol-server.ts';
import type { LocalTopic } from './sns-stand-in.ts';

type StateValue = 'OK' | 'ALARM' | 'INSUFFICIENT_DATA';
type HistoryItemType = 'ConfigurationUpdate' | 'StateUpdate' | 'Action';
type Input = Record<string, unknown>;

interface HistoryItem {
  AlarmName: string;
  AlarmType: 'MetricAlarm';
  timestampMs: number;
  HistoryItemType: HistoryItemType;
  HistorySummary: string;
  HistoryData: string;
}

interface AlarmRecord {
  alarm: LocalAlarm;
  arn: string;
  state: StateValue;
  reason: string;
  reasonData?: string;
  updatedMs: number;
  transitionedMs: number;
  history: HistoryItem[];
}

/**
 * A CloudWatch error as the JSON 1.0 protocol answers it to a client in query-compatible mode: the model's type in
 * `__type`, the query-era code in `x-amzn-query-error`, which the SDK names the error by.
 */
class CloudWatchError extends Error {
  constructor(
    readonly type: string,
    readonly queryCode: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}
const validation = (message: string) => new CloudWatchError('ValidationException', 'ValidationError', message);
const serialization = (message: string) => new CloudWatchError('SerializationException', 'SerializationException', message);

/*
 * The constraints of the CloudWatch API reference (API version 2010-08-01) for the members the twin reads.
 */
const STATE_VALUES: readonly StateValue[] = ['OK', 'ALARM', 'INSUFFICIENT_DATA'];
const HISTORY_ITEM_TYPES: readonly HistoryItemType[] = ['ConfigurationUpdate', 'StateUpdate', 'Action'];
const ALARM_TYPES = ['CompositeAlarm', 'MetricAlarm'];
const SCAN_BY = ['TimestampDescending', 'TimestampAscending'];
const ALARM_NAME_LENGTH = { min: 1, max: 255 };
const ACTION_PREFIX_LENGTH = { min: 1, max: 1024 };
const STATE_REASON_LENGTH = { min: 0, max: 1023 };
const STATE_REASON_DATA_LENGTH = { min: 0, max: 4000 };
const MAX_ALARM_NAMES = 100;
const MAX_RECORDS = { min: 1, max: 100 };
/** DescribeAlarms answers 50 alarms a page unless MaxRecords says otherwise; DescribeAlarmHistory 100 items. */
const DEFAULT_ALARMS_PAGE = 50;
const DEFAULT_HISTORY_PAGE = 100;
/** CloudWatch keeps 30 days of history; the twin keeps the newest items of each alarm, so its memory stays bounded. */
const MAX_HISTORY_PER_ALARM = 100;

const TARGET_PREFIX = 'GraniteServiceVersion20100801.';
const JSON_CONTENT_TYPE = 'application/x-amz-json-1.0';
const REGION_NAMES: Record<string, string> = { 'us-east-1': 'US East (N. Virginia)' };

function member<T>(input: Input, name: string, is: (value: unknown) => value is T, expected: string): T | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (!is(value)) throw serialization(`${name}: expected ${expected}`);
  return value;
}
const isString = (value: unknown): value is string => typeof value === 'string';
const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);
/** The JSON protocols carry a timestamp as epoch seconds. */
const isEpochSeconds = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);

const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
function failed(value: unknown, at: string, constraint: string): never {
  throw validation(
    `1 validation error detected: Value '${shown(value)}' at '${at}' failed to satisfy constraint: Member must ${constraint}`,
  );
}
function required<T>(value: T | undefined, at: string): T {
  if (value === undefined)
    throw validation(`1 validation error detected: Value null at '${at}' failed to satisfy constraint: Member must not be null`);
  return value;
}
function length(value: string | readonly unknown[] | undefined, at: string, { min, max }: { min: number; max: number }): void {
  if (value === undefined) return;
  if (value.length < min) failed(value, at, `have length greater than or equal to ${min}`);
  if (value.length > max) failed(value, at, `have length less than or equal to ${max}`);
}
function oneOf<T extends string>(value: string | undefined, at: string, allowed: readonly T[]): T | undefined {
  if (value !== undefined && !allowed.includes(value as T)) failed(value, at, `satisfy enum value set: [${allowed.join(', ')}]`);
  return value as T | undefined;
}
function range(value: number | undefined, at: string, { min, max }: { min: number; max: number }): void {
  if (value === undefined) return;
  if (value < min) failed(value, at, `have value greater than or equal to ${min}`);
  if (value > max) failed(value, at, `have value less than or equal to ${max}`);
}

/** A page token: where the next page starts among the answers of one operation; one the stand-in did not write is refused. */
const tokenOf = (operation: string, offset: number) => Buffer.from(`${operation}:${offset}`).toString('base64url');
function offsetOf(operation: string, token: string | undefined): number {
  if (token === undefined) return 0;
  const match = new RegExp(`^${operation}:(\\d+)$`).exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (!match) throw new CloudWatchError('InvalidNextToken', 'InvalidNextToken', 'The next token specified is invalid.');
  return Number(match[1]);
}
function page<T>(operation: string, items: readonly T[], token: string | undefined, size: number): { items: T[]; NextToken?: string } {
  const start = offsetOf(operation, token);
  const items_ = items.slice(start, start + size);
  const next = start + items_.length < items.length ? tokenOf(operation, start + items_.length) : undefined;
  return { items: items_, ...(next ? { NextToken: next } : {}) };
}

const seconds = (ms: number) => ms / 1000;

export interface CloudWatchStandInOptions {
  /** The stack's alarms the twin knows (local-alarms.ts), each starting OK. */
  alarms: readonly LocalAlarm[];
  /** The SNS topics an alarm's action may name, by ARN. */
  topics: readonly LocalTopic[];
  now?: () => number;
  port?: number;
}

export interface CloudWatchStandIn {
  endpoint: string;
  /** Resolves once every alarm action started so far has run and its history item is written. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The twin's CloudWatch alarms: the JSON 1.0 API the SDK speaks (target prefix `GraniteServiceVersion20100801.`, in
 * query-compatible mode), answering DescribeAlarms, SetAlarmState and DescribeAlarmHistory over the alarms it is given,
 * all OK at start (it evaluates no metric). SetAlarmState sets the state and its reason; when the state changes, it
 * records a StateUpdate item and the alarm's actions for the new state run after the answer, as on AWS ("When the
 * updated state differs from the previous value, the action configured for the appropriate state is invoked", the
 * SetAlarmState reference): each
 * publishes to its topic as `cloudwatch.amazonaws.com` with the alarm's ARN and account, which the topic's policy
 * may refuse, and records an Action item saying which, in CloudWatch's words. Kept in memory: a restart starts every
 * alarm OK with no history. The IAM front door before it authorizes each action.
 */
export async function startCloudWatchStandIn(options: CloudWatchStandInOptions): Promise<CloudWatchStandIn> {
  const now = options.now ?? Date.now;
  const startedMs = now();
  const topics = new Map(options.topics.map((topic) => [topic.arn, topic]));
  const alarms = new Map<string, AlarmRecord>(
    options.alarms.map((alarm) => [
      alarm.name,
      {
        alarm,
        arn: localAlarmArn(alarm.name),
        state: 'OK',
        reason: 'Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated as [NonBreaching].',
        updatedMs: startedMs,
        transitionedMs: startedMs,
        history: [],
      },
    ]),
  );
  const pending = new Set<Promise<void>>();
  const record = (alarm: AlarmRecord, item: Omit<HistoryItem, 'AlarmName' | 'AlarmType'>) => {
    alarm.history.push({ AlarmName: alarm.alarm.name, AlarmType: 'MetricAlarm', ...item });
    if (alarm.history.length > MAX_HISTORY_PER_ALARM) alarm.history.shift();
  };

  const describe = (alarm: AlarmRecord) => ({
    AlarmName: alarm.alarm.name,
    AlarmArn: alarm.arn,
    AlarmDescription: alarm.alarm.description,
    AlarmConfigurationUpdatedTimestamp: seconds(startedMs),
    ActionsEnabled: true,
    OKActions: [],
    AlarmActions: [...alarm.alarm.alarmActions],
    InsufficientDataActions: [],
    StateValue: alarm.state,
    StateReason: alarm.reason,
    ...(alarm.reasonData !== undefined ? { StateReasonData: alarm.reasonData } : {}),
    StateUpdatedTimestamp: seconds(alarm.updatedMs),
    StateTransitionedTimestamp: seconds(alarm.transitionedMs),
    MetricName: alarm.alarm.metricName,
    Namespace: alarm.alarm.namespace,
    Statistic: 'Sum',
    Dimensions: alarm.alarm.dimensions.map((dimension) => ({ ...dimension })),
    Period: 300,
    EvaluationPeriods: 1,
    DatapointsToAlarm: 1,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
  });

  /** The action of a state change, as CloudWatch runs it: a publish to the topic, its outcome in the alarm's history. */
  function runAction(alarm: AlarmRecord, action: string, change: { from: StateValue; at: number }): void {
    const message = JSON.stringify({
      AlarmName: alarm.alarm.name,
      AlarmDescription: alarm.alarm.description,
      AWSAccountId: LOCAL_ACCOUNT,
      AlarmConfigurationUpdatedTimestamp: new Date(startedMs).toISOString(),
      NewStateValue: alarm.state,
      NewStateReason: alarm.reason,
      StateChangeTime: new Date(change.at).toISOString(),
      Region: REGION_NAMES[LOCAL_REGION] ?? LOCAL_REGION,
      AlarmArn: alarm.arn,
      OldStateValue: change.from,
    });
    const stateUpdateTimestamp = change.at;
    const topic = topics.get(action);
    try {
      if (!topic) throw new Error('Topic does not exist');
      topic.publish({
        caller: { service: CLOUDWATCH_SERVICE_PRINCIPAL },
        context: { 'aws:SourceArn': alarm.arn, 'aws:SourceAccount': LOCAL_ACCOUNT, 'aws:SecureTransport': 'true' },
        subject: `${alarm.state}: "${alarm.alarm.name}" in ${REGION_NAMES[LOCAL_REGION] ?? LOCAL_REGION}`.slice(0, 100),
        message,
      });
      record(alarm, {
        timestampMs: now(),
        HistoryItemType: 'Action',
        HistorySummary: `Successfully executed action ${action}`,
        HistoryData: JSON.stringify({
          actionState: 'Succeeded',
          stateUpdateTimestamp,
          notificationResource: action,
          publishedMessage: message,
        }),
      });
    } catch (error) {
      const received = (error as Error).message;
      record(alarm, {
        timestampMs: now(),
        HistoryItemType: 'Action',
        HistorySummary: `Failed to execute action ${action}. Received error: "${received}"`,
        HistoryData: JSON.stringify({ actionState: 'Failed', stateUpdateTimestamp, notificationResource: action, error: received }),
      });
    }
  }

  const operations: Record<string, (input: Input) => object> = {
    DescribeAlarms(input) {
      const names = member(input, 'AlarmNames', isStrings, 'a list of strings');
      const prefix = member(input, 'AlarmNamePrefix', isString, 'a string');
      const actionPrefix = member(input, 'ActionPrefix', isString, 'a string');
      const types = member(input, 'AlarmTypes', isStrings, 'a list of strings');
      const state = oneOf(member(input, 'StateValue', isString, 'a string'), 'stateValue', STATE_VALUES);
      const maxRecords = member(input, 'MaxRecords', isInteger, 'an integer');
      const nextToken = member(input, 'NextToken', isString, 'a string');
      length(names, 'alarmNames', { min: 0, max: MAX_ALARM_NAMES });
      for (const [i, name] of (names ?? []).entries()) length(name, `alarmNames.${i + 1}.member`, ALARM_NAME_LENGTH);
      length(prefix, 'alarmNamePrefix', ALARM_NAME_LENGTH);
      length(actionPrefix, 'actionPrefix', ACTION_PREFIX_LENGTH);
      for (const [i, type] of (types ?? []).entries()) oneOf(type, `alarmTypes.${i + 1}.member`, ALARM_TYPES);
      range(maxRecords, 'maxRecords', MAX_RECORDS);
      if (names !== undefined && prefix !== undefined)
        throw new CloudWatchError(
          'InvalidParameterCombinationException',
          'InvalidParameterCombination',
          'AlarmNamePrefix and AlarmNames cannot be specified together.',
        );
      // Without AlarmTypes only metric alarms are answered; the twin has no composite alarm.
      const matching =
        types && !types.includes('MetricAlarm')
          ? []
          : [...alarms.values()]
              .filter(
                (alarm) =>
                  (!names || names.includes(alarm.alarm.name)) &&
                  (!prefix || alarm.alarm.name.startsWith(prefix)) &&
                  (!state || alarm.state === state) &&
                  (!actionPrefix || alarm.alarm.alarmActions.some((action) => action.startsWith(actionPrefix))),
              )
              .sort((a, b) => (a.alarm.name < b.alarm.name ? -1 : 1));
      const { items, NextToken } = page('alarms', matching, nextToken, maxRecords ?? DEFAULT_ALARMS_PAGE);
      return { MetricAlarms: items.map(describe), CompositeAlarms: [], ...(NextToken ? { NextToken } : {}) };
    },

    SetAlarmState(input) {
      const name = required(member(input, 'AlarmName', isString, 'a string'), 'alarmName');
      const state = required(oneOf(member(input, 'StateValue', isString, 'a string'), 'stateValue', STATE_VALUES), 'stateValue');
      const reason = required(member(input, 'StateReason', isString, 'a string'), 'stateReason');
      const reasonData = member(input, 'StateReasonData', isString, 'a string');
      length(name, 'alarmName', ALARM_NAME_LENGTH);
      length(reason, 'stateReason', STATE_REASON_LENGTH);
      length(reasonData, 'stateReasonData', STATE_REASON_DATA_LENGTH);
      if (reasonData !== undefined) {
        try {
          JSON.parse(reasonData);
        } catch {
          throw new CloudWatchError('InvalidFormatFault', 'InvalidFormat', 'StateReasonData is not valid JSON.');
        }
      }
      const alarm = alarms.get(name);
      if (!alarm) throw new CloudWatchError('ResourceNotFound', 'ResourceNotFound', `Alarm ${name} not found`, 404);
      const from = alarm.state;
      const at = now();
      const oldState = { stateValue: from, stateReason: alarm.reason };
      Object.assign(alarm, { state, reason, reasonData, updatedMs: at });
      if (from === state) return {};
      alarm.transitionedMs = at;
      record(alarm, {
        timestampMs: at,
        HistoryItemType: 'StateUpdate',
        HistorySummary: `Alarm updated from ${from} to ${state}`,
        HistoryData: JSON.stringify({ version: '1.0', oldState, newState: { stateValue: state, stateReason: reason } }),
      });
      // Only a change runs actions; this stack's alarms have actions for ALARM alone.
      const actions = state === 'ALARM' ? alarm.alarm.alarmActions : [];
      for (const action of actions) {
        const done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => runAction(alarm, action, { from, at }));
        pending.add(done);
        void done.finally(() => pending.delete(done));
      }
      return {};
    },

    DescribeAlarmHistory(input) {
      const name = member(input, 'AlarmName', isString, 'a string');
      const types = member(input, 'AlarmTypes', isStrings, 'a list of strings');
      const itemType = oneOf(member(input, 'HistoryItemType', isString, 'a string'), 'historyItemType', HISTORY_ITEM_TYPES);
      const start = member(input, 'StartDate', isEpochSeconds, 'a timestamp');
      const end = member(input, 'EndDate', isEpochSeconds, 'a timestamp');
      const maxRecords = member(input, 'MaxRecords', isInteger, 'an integer');
      const nextToken = member(input, 'NextToken', isString, 'a string');
      const scanBy = oneOf(member(input, 'ScanBy', isString, 'a string'), 'scanBy', SCAN_BY);
      length(name, 'alarmName', ALARM_NAME_LENGTH);
      for (const [i, type] of (types ?? []).entries()) oneOf(type, `alarmTypes.${i + 1}.member`, ALARM_TYPES);
      range(maxRecords, 'maxRecords', MAX_RECORDS);
      // History is kept for deleted alarms too, so an unknown name answers no items rather than an error.
      const source = name === undefined ? [...alarms.values()] : [alarms.get(name)].filter((alarm) => alarm !== undefined);
      const items =
        types && !types.includes('MetricAlarm')
          ? []
          : source
              .flatMap((alarm) => alarm.history)
              .filter(
                (item) =>
                  (!itemType || item.HistoryItemType === itemType) &&
                  (start === undefined || item.timestampMs >= start * 1000) &&
                  (end === undefined || item.timestampMs <= end * 1000),
              )
              .sort((a, b) => (scanBy === 'TimestampAscending' ? a.timestampMs - b.timestampMs : b.timestampMs - a.timestampMs));
      const found = page('history', items, nextToken, maxRecords ?? DEFAULT_HISTORY_PAGE);
      return {
        AlarmHistoryItems: found.items.map(({ timestampMs, ...item }) => ({ ...item, Timestamp: seconds(timestampMs) })),
        ...(found.NextToken ? { NextToken: found.NextToken } : {}),
      };
    },
  };

  const server = jsonProtocolServer({
    targetPrefix: TARGET_PREFIX,
    contentType: JSON_CONTENT_TYPE,
    operations,
    unknownOperation: (target) =>
      new CloudWatchError('UnknownOperationException', 'UnknownOperationException', `The operation ${target} is not known here.`),
    notJson: () => serialization('The request body is not valid JSON.'),
    notObject: () => serialization('Start of structure or map expected.'),
    refusal: (error) => {
      const failure =
        error instanceof CloudWatchError
          ? error
          : new CloudWatchError('InternalServiceFault', 'InternalServiceError', 'An internal error occurred', 500);
      return {
        status: failure.status,
        headers: { 'x-amzn-query-error': `${failure.queryCode};${failure.status >= 500 ? 'Receiver' : 'Sender'}` },
        body: { __type: `com.amazonaws.cloudwatch#${failure.type}`, message: failure.message },
      };
    },
  });
  const listening = await listenOnLoopback(server, options.port);
  return {
    endpoint: listening.endpoint,
    settled: async () => void (await Promise.all([...pending])),
    close: () => listening.close(),
  };
}
