import {
  BUCKET_ENV,
  SECRETS_PREFIX_ENV,
  STATE_MACHINE_ENVS,
  TABLE_ENV,
  type BucketName,
  type StateMachineName,
  type TableName,
} from '#shared/resources.ts';
import { INFERENCE_PROFILES_ENV } from '#engine/inference-profiles.ts';
import type { FunctionDeclaration } from '#lib/twin/iam/function-policy.ts';
import { LOCAL_SECRETS_PREFIX, localStateMachineArn } from '#lib/twin/local-arns.ts';
import { POWERTOOLS_ENVIRONMENT } from '#lib/cdk/powertools-environment.ts';
import { STREAM_FLUSH_PADDING_ENV } from '#shared/http/stream-padding.ts';
import { MAX_OPEN_STREAMS_ENV, parseMaxOpenStreams, parseStreamWindowSeconds, STREAM_WINDOW_ENV } from '#shared/http/stream-settings.ts';
import { LOCAL_BUCKET, LOCAL_REGION, localTableName } from '#lib/twin/stores.ts';

export interface LocalEndpoints {
  dynamodb: string;
  s3: string;
  stepFunctions: string;
  ssm: string;
  bedrock: string;
}

export interface LocalCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * Developer settings of the machine running the twin that reach every function, as a deployer would set them on a
 * function: callbacks to a loopback receiver, shorter heartbeats, streams and slow-reader bounds for tests, how chatty
 * Powertools is, and the origins browsers may call from (read by the published functions only, as CDK sets it on
 * those only).
 */
const HOST_SETTINGS = [
  'ALLOW_LOOPBACK_CALLBACKS',
  'CORS_ALLOWED_ORIGINS',
  'ALLOW_LOOPBACK_RECORDINGS',
  'ALLOW_LOOPBACK_TOOLS',
  'RECORDING_TIMEOUT_MS',
  'EXECUTE_HEARTBEAT_MS',
  'STREAM_HEARTBEAT_MS',
  'STREAM_MAX_MS',
  'STREAM_SLOW_READER_MS',
  'POWERTOOLS_LOG_LEVEL',
  'POWERTOOLS_METRICS_DISABLED',
] as const;

/**
 * What one function sees in `process.env` on the twin: what the Lambda runtime sets, the Powertools settings CDK
 * sets, and, as the CDK grants do, a variable for each table, bucket and state machine its entry declares. Nothing
 * else: a function that reads an undeclared resource's variable fails as it would on AWS.
 */
export function functionEnvironment(
  declaration: FunctionDeclaration & { readonly streaming?: boolean; readonly openStream?: 'window' | 'bounded' },
  endpoints: LocalEndpoints,
  credentials: LocalCredentials,
  localFiles: { handoffEvents: string },
  inferenceProfiles?: ReadonlyMap<string, string>,
): Record<string, string> {
  const environment: Record<string, string> = {
    ...POWERTOOLS_ENVIRONMENT,
    POWERTOOLS_SERVICE_NAME: 'workflow-ingest-local',
    POWERTOOLS_METRICS_NAMESPACE: 'WorkflowIngestLocal',
    // Traces go nowhere locally.
    POWERTOOLS_TRACE_ENABLED: 'false',
    // The twin runs the sources, so the real Tracer loads the X-Ray SDK, whose context tracking puts async hooks on
    // every request (about a fifth of the twin's CPU) although nothing is traced. Bundles on AWS carry no X-Ray SDK
    // unless -c sdkTracing=true (lib/cdk/bundling/tracer-off.ts); in manual mode the SDK tracks no context either.
    AWS_XRAY_MANUAL_MODE: '1',
    // Metrics (EMF lines) and INFO lines are written as on AWS, so that the log meter counts what CloudWatch Logs bills;
    // the twin shows only warnings and errors (function-host.ts forwards the rest nowhere).
    AWS_LAMBDA_FUNCTION_NAME: declaration.id,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_REGION: LOCAL_REGION,
    AWS_DEFAULT_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_S3: endpoints.s3,
    AWS_ENDPOINT_URL_SFN: endpoints.stepFunctions,
    AWS_ENDPOINT_URL_SSM: endpoints.ssm,
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME: endpoints.bedrock,
    S3_FORCE_PATH_STYLE: '1',
  };
  for (const table of Object.keys(declaration.tables) as TableName[]) environment[TABLE_ENV[table]] = localTableName(table);
  for (const bucket of Object.keys(declaration.buckets ?? {}) as BucketName[]) environment[BUCKET_ENV[bucket]] = LOCAL_BUCKET;
  for (const [machine, access] of Object.entries(declaration.stateMachines ?? {}) as [StateMachineName, readonly string[]][]) {
    if (access.length > 0) environment[STATE_MACHINE_ENVS[machine]] = localStateMachineArn(machine);
  }
  if (declaration.readsSecrets) environment[SECRETS_PREFIX_ENV] = LOCAL_SECRETS_PREFIX;
  // As CDK: the deployment's application inference profiles (model id → ARN) for a function that invokes Bedrock, which
  // calls through nothing else and fails its cold start without them.
  if (declaration.invokesBedrock) {
    if (!inferenceProfiles) throw new Error(`${declaration.id} invokes Bedrock: its environment needs the deployment's inference profiles`);
    environment[INFERENCE_PROFILES_ENV] = JSON.stringify(Object.fromEntries(inferenceProfiles));
  }
  // Where CDK names the hand-off bus, the twin names the file the announcements go to.
  if (declaration.announcesHandoffs) environment.HANDOFF_EVENTS_FILE = localFiles.handoffEvents;
  for (const name of HOST_SETTINGS) {
    const value = process.env[name];
    if (value !== undefined) environment[name] = value;
  }
  // As CDK: the deployment's padding of streamed writes, on the streaming routes' functions only (0 unless set).
  if (declaration.streaming) environment[STREAM_FLUSH_PADDING_ENV] = process.env[STREAM_FLUSH_PADDING_ENV] ?? '0';
  // As CDK: the deployment's open streams on every stream route's function, its stream window on the windowed ones
  // (each its default unless set, written out as CDK writes it).
  if (declaration.openStream) {
    environment[MAX_OPEN_STREAMS_ENV] = String(parseMaxOpenStreams(process.env[MAX_OPEN_STREAMS_ENV], MAX_OPEN_STREAMS_ENV));
  }
  if (declaration.openStream === 'window') {
    environment[STREAM_WINDOW_ENV] = String(parseStreamWindowSeconds(process.env[STREAM_WINDOW_ENV], STREAM_WINDOW_ENV));
  }
  return environment;
}
