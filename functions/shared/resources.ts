/**
 * The data resources handlers use, and the environment variable that names each one in a function.
 * The CDK stack sets these (and grants access) per route; the local twin sets them all.
 */
export const TABLE_ENV = {
  links: 'LINKS_TABLE',
  counters: 'COUNTERS_TABLE',
  inboundEvents: 'INBOUND_EVENTS_TABLE',
  apiKeys: 'API_KEYS_TABLE',
  publications: 'PUBLICATIONS_TABLE',
  executions: 'EXECUTIONS_TABLE',
  conversations: 'CONVERSATIONS_TABLE',
} as const;

export const BUCKET_ENV = {
  bodies: 'BODIES_BUCKET',
} as const;

export type TableName = keyof typeof TABLE_ENV;
export type BucketName = keyof typeof BUCKET_ENV;
export type Access = 'read' | 'write' | 'readWrite';

/** The workflow state machine, and what a function may do with it. */
export const STATE_MACHINE_ENV = 'STATE_MACHINE_ARN';
export type StateMachineAccess = 'start' | 'stop' | 'taskResponse';
