import { deployedTableId, TABLE_ENV, type BucketName, type TableName } from '#shared/resources.ts';

/** CloudFormation output names: the stack writes them, the admin CLI reads them to find a deployment's resources. */
/** The Published Workflow API's REST API stage (`https://<id>.execute-api.<region>.amazonaws.com/prod/`): `{base_url}`. */
export const API_URL_OUTPUT = 'ApiUrl';
/** The webhook API's HTTP API (`https://<id>.execute-api.<region>.amazonaws.com`, no stage path): `{webhook_base_url}`. */
export const WEBHOOK_API_URL_OUTPUT = 'WebhookApiUrl';

/** `<Table>TableName`, named as first deployed (`deployedTableId`), so an admin CLI finds the tables of any version. */
export const TABLE_OUTPUTS = Object.fromEntries(
  (Object.keys(TABLE_ENV) as TableName[]).map((table) => [table, `${deployedTableId(table)}TableName`]),
) as Record<TableName, string>;

/**
 * The stack's `operations` setting (`full` or `lean`), so that the admin CLI's cost report counts the fixed items this
 * deployment has; a stack without this output has every alarm and the dashboard (`full`).
 */
export const OPERATIONS_MODE_OUTPUT = 'OperationsMode';
/**
 * `full`: every alarm and the dashboard. `lean`: only the alarms that say accepted conversations are not reaching the
 * analysis, which nothing else would tell anyone before the events expire unseen; no dashboard.
 */
export const OPERATIONS_MODES = ['full', 'lean'] as const;
export type OperationsMode = (typeof OPERATIONS_MODES)[number];

/** The workflow state machine (executions and their callbacks). */
export const STATE_MACHINE_OUTPUT = 'WorkflowStateMachineArn';
/** The collection state machine, which the admin CLI's `collect` starts a task's sweep on. */
export const COLLECTION_STATE_MACHINE_OUTPUT = 'CollectionStateMachineArn';

export const BUCKET_OUTPUTS: Record<BucketName, string> = {
  bodies: 'BodiesBucketName',
};

/** Where the stack keeps projects' tool secrets (SSM parameters `<prefix>/<project>/<NAME>`). */
export const SECRETS_PREFIX_OUTPUT = 'SecretsParameterPrefix';

/**
 * The deployment's Bedrock allow-list as the step function calls it: one JSON object, model id → its application
 * inference profile's ARN (the step function's `BEDROCK_INFERENCE_PROFILES`). `admin verify` calls each model
 * through its profile.
 */
export const BEDROCK_PROFILES_OUTPUT = 'BedrockInferenceProfiles';

/**
 * Streams the deployment serves at once, all keys together (`-c maxOpenStreams`): `admin verify` sets it beside the
 * account's unreserved Lambda concurrency. A stack without this output serves the default (limits.ts).
 */
export const MAX_OPEN_STREAMS_OUTPUT = 'MaxOpenStreams';
