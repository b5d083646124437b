import { deployedTableName, type TableName } from '#shared/resources.ts';

/*
 * The names of the twin's stores, in a module that loads nothing: the admin CLI needs them on every call, the
 * stores themselves (and their SDK clients) only when no twin is running.
 */

/** The local S3 store accepts only its fixed credentials; the local DynamoDB accepts any. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
export const LOCAL_REGION = 'us-east-1';
export const LOCAL_BUCKET = 'local-bodies';
/** The twin's stack name, as a deployment's: what its alarms' names start with (`<stack>-`, lib/cdk/alarm-topic-policy.ts). */
export const LOCAL_STACK_NAME = 'local';

export function localTableName(table: TableName): string {
  return `local-${deployedTableName(table)}`;
}
