import { createHash } from 'node:crypto';
import { alarmNamePrefix } from '#lib/cdk/alarm-topic-policy.ts';
import { LOCAL_ACCOUNT } from './local-arns.ts';
import { LOCAL_REGION, LOCAL_STACK_NAME } from './local-names.ts';

/** The twin's alarm topic, named as CloudFormation names a topic without TopicName: `<stack>-<logical id>-<suffix>`. */
export const LOCAL_ALARM_TOPIC_ARN = `arn:aws:sns:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${LOCAL_STACK_NAME}-OperationsAlarmTopic-LOCAL0TOPIC`;

export const localAlarmArn = (name: string) => `arn:aws:cloudwatch:${LOCAL_REGION}:${LOCAL_ACCOUNT}:alarm:${name}`;

/** One metric alarm the twin knows: what DescribeAlarms answers of it, and the topic its ALARM state notifies. */
export interface LocalAlarm {
  readonly name: string;
  readonly description: string;
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: readonly { Name: string; Value: string }[];
  readonly alarmActions: readonly string[];
}

/**
 * A representative part of the stack's alarms (lib/cdk/constructs/operations.ts, which the twin may not import): each
 * function's errors alarm (`Errors-<function id>`, threshold 1 in five minutes), notifying the alarm topic. None of
 * them names itself, so CloudFormation names each `<stack>-<logical id>-<suffix>`; the twin does the same with its
 * stack name (`local`), a logical id shaped as CDK's without its hash, and a suffix fixed per function.
 */
export function localAlarms(functionIds: readonly string[]): LocalAlarm[] {
  return functionIds.map((id) => {
    const logicalId = `OperationsErrors${id.replace(/[^A-Za-z0-9]/g, '')}`;
    const suffix = createHash('sha256').update(id).digest('hex').slice(0, 12).toUpperCase();
    return {
      name: `${alarmNamePrefix(LOCAL_STACK_NAME)}${logicalId}-${suffix}`,
      description: `${id} failed an invocation (an uncaught error or a timeout): a request answered 502, or a task was retried.`,
      namespace: 'AWS/Lambda',
      metricName: 'Errors',
      dimensions: [{ Name: 'FunctionName', Value: id }],
      alarmActions: [LOCAL_ALARM_TOPIC_ARN],
    };
  });
}
