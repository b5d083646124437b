import type { StateMachineName, TableName } from '#shared/resources.ts';
import { LOCAL_REGION, localTableName } from './local-names.ts';

/** The account and ARNs of the local twin's resources, shaped as on AWS so that local IAM checks read like real policies. */
export const LOCAL_ACCOUNT = '000000000000';
export const localStateMachineArn = (machine: StateMachineName) =>
  `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:local-${machine}`;
/** Every execution of one local state machine (what a `stop` grant covers). */
export const localExecutionsArn = (machine: StateMachineName) =>
  `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:execution:local-${machine}:*`;
/** The workflow state machine (executions and their callbacks). */
export const LOCAL_STATE_MACHINE_ARN = localStateMachineArn('workflow');
export const LOCAL_COLLECTION_STATE_MACHINE_ARN = localStateMachineArn('collection');

export const localFunctionArn = (id: string) => `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${id}`;
export const localTableArn = (table: TableName) => tableArnOf(localTableName(table));
export const tableArnOf = (tableName: string) => `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${tableName}`;
export const objectArnOf = (bucket: string, key: string) => `arn:aws:s3:::${bucket}/${key}`;
/** Where the twin keeps projects' tool secrets in its SSM stand-in (CDK: `/<stack>/secrets`). */
export const LOCAL_SECRETS_PREFIX = '/local/secrets';
export const parameterArnOf = (name: string) => `arn:aws:ssm:${LOCAL_REGION}:${LOCAL_ACCOUNT}:parameter/${name.replace(/^\//, '')}`;
