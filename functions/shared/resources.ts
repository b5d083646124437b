/**
 * The data resources handlers use, and the environment variable that names each one in a function.
 * The CDK stack sets these (and grants access) per route; the local twin sets them all.
 */
export const TABLE_ENV = {
  links: 'LINKS_TABLE',
  counters: 'COUNTERS_TABLE',
  inboundEvents: 'INBOUND_EVENTS_TABLE',
} as const;

export const BUCKET_ENV = {
  bodies: 'BODIES_BUCKET',
} as const;

export type TableName = keyof typeof TABLE_ENV;
export type BucketName = keyof typeof BUCKET_ENV;
export type Access = 'read' | 'write' | 'readWrite';
