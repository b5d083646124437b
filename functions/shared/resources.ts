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
  userState: 'USER_STATE_TABLE',
  streamEvents: 'STREAM_EVENTS_TABLE',
  collection: 'COLLECTION_TABLE',
  usage: 'USAGE_TABLE',
} as const;

export const BUCKET_ENV = {
  bodies: 'BODIES_BUCKET',
} as const;

export type TableName = keyof typeof TABLE_ENV;

/**
 * The names two tables were first deployed under. CloudFormation names a table's resource after it, and the twin its
 * local table, so a new name would replace the table and leave every user's memory, threads and stream events behind.
 */
const FIRST_DEPLOYED_AS: Partial<Record<TableName, string>> = { userState: 'conversations', streamEvents: 'runEvents' };
export const deployedTableName = (table: TableName): string => FIRST_DEPLOYED_AS[table] ?? table;
/** The same name as CloudFormation ids and outputs spell it (`Conversations`, `InboundEvents`). */
export const deployedTableId = (table: TableName): string => {
  const name = deployedTableName(table);
  return `${name[0]!.toUpperCase()}${name.slice(1)}`;
};
export type BucketName = keyof typeof BUCKET_ENV;
export type Access = 'read' | 'write' | 'readWrite';

const TABLE_READ = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'] as const;
const TABLE_WRITE = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'] as const;
/**
 * The DynamoDB actions each access grants, on the table and its indexes. CDK writes them into each function's role
 * and the local twin's front door enforces the same list. No Scan: only the operator's CLI lists a whole table.
 */
export const TABLE_ACTIONS: Record<Access, readonly string[]> = {
  read: TABLE_READ,
  write: TABLE_WRITE,
  readWrite: [...TABLE_READ, ...TABLE_WRITE],
};

/**
 * The key prefixes of the bodies bucket, one per kind of object: webhook bodies, run values (execution context,
 * node outputs, results, long history turns) of workflow executions, collected recordings, and hand-offs.
 */
export const BUCKET_PREFIXES = ['inbound/', 'executions/', 'recordings/', 'handoff/'] as const;
export type BucketPrefix = (typeof BUCKET_PREFIXES)[number];
/** Object actions: read is GetObject, write PutObject, readWrite both; the `…Delete` ones add DeleteObject. */
export type ObjectAccess = Access | 'writeDelete' | 'readWriteDelete' | 'upload';
export const OBJECT_ACTIONS: Record<ObjectAccess, readonly string[]> = {
  read: ['s3:GetObject'],
  write: ['s3:PutObject'],
  readWrite: ['s3:GetObject', 's3:PutObject'],
  writeDelete: ['s3:PutObject', 's3:DeleteObject'],
  readWriteDelete: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
  /** Multipart uploads of unbounded size: PutObject covers their parts; a failed transfer aborts its upload. */
  upload: ['s3:PutObject', 's3:AbortMultipartUpload'],
};
/** What a function may do in a bucket, per key prefix (a grant on `<prefix>*` only). Plain data, read by CDK and the local twin. */
export type BucketGrant = Readonly<Partial<Record<BucketPrefix, ObjectAccess>>>;

/**
 * The product's state machines, one ASL file each (`statemachines/<name>.asl.json`): `workflow` runs published
 * workflows and their callbacks, `collection` runs collection tasks. A function that declares one is told its ARN
 * in this variable, and is granted exactly the declared actions on it and on nothing else.
 */
export const STATE_MACHINE_ENVS = { workflow: 'STATE_MACHINE_ARN', collection: 'COLLECTION_STATE_MACHINE_ARN' } as const;
export type StateMachineName = keyof typeof STATE_MACHINE_ENVS;
export const STATE_MACHINE_NAMES = Object.keys(STATE_MACHINE_ENVS) as StateMachineName[];
/** The workflow state machine's variable (executions and their callbacks). */
export const STATE_MACHINE_ENV = STATE_MACHINE_ENVS.workflow;
export const COLLECTION_STATE_MACHINE_ENV = STATE_MACHINE_ENVS.collection;
export type StateMachineAccess = 'start' | 'stop' | 'taskResponse';
/** What a function may do, per state machine it declares. Plain data, read by CDK and the local twin. */
export type StateMachineGrant = Readonly<Partial<Record<StateMachineName, readonly StateMachineAccess[]>>>;
/**
 * What one function touches, as a route (functions/routes.ts) or a task function (functions/task-functions.ts) declares
 * it: each entry becomes an environment variable and a grant of exactly that access, in CDK and in the twin's IAM.
 */
export interface ResourceGrants {
  /** Per table, how: read, write or both. */
  readonly tables: Partial<Record<TableName, Access>>;
  /** Per bucket, the key prefixes it touches and how; each a grant on exactly `<prefix>*`. */
  readonly buckets?: Partial<Record<BucketName, BucketGrant>>;
  /** Per state machine, what it does with it: a grant of exactly those actions, and the machine's ARN variable. */
  readonly stateMachines?: StateMachineGrant;
  /** Whether it calls Amazon Bedrock (llm, agent and image nodes with provider bedrock), on the allowed models only. */
  readonly invokesBedrock?: boolean;
  /** Whether it reads projects' tool secrets (SSM parameters under the stack's secrets prefix). */
  readonly readsSecrets?: boolean;
  /** Whether it announces hand-offs (on AWS: PutEvents on the stack's hand-off bus; locally: a file under DATA_DIR). */
  readonly announcesHandoffs?: boolean;
}

/** The Step Functions actions of each access: start and taskResponse on the state machine, stop on its executions. */
export const STATE_MACHINE_ACTIONS: Record<StateMachineAccess, readonly string[]> = {
  start: ['states:StartExecution'],
  stop: ['states:StopExecution'],
  taskResponse: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'],
};

/**
 * Where a project's `{{secret.NAME}}` values live: SSM parameters `<prefix>/<project_id>/<NAME>` (SecureString).
 * CDK names the prefix per stack and grants reading under it to the step function only.
 */
export const SECRETS_PREFIX_ENV = 'SECRETS_PARAMETER_PREFIX';

export function secretParameterName(prefix: string, projectId: string, name: string): string {
  return `${prefix}/${projectId}/${name}`;
}

/** Every function adds what each invocation spent to its subject's daily usage item (shared/usage-meter.ts). */
export const METERED = { usage: 'write' } as const;
