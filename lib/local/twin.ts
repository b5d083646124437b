import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { API_STAGE, routes } from '../../functions/routes.ts';
import { taskFunctions } from '../../functions/task-functions.ts';
import { BUCKET_ENV, STATE_MACHINE_ENV, TABLE_ENV, type TableName } from '../../functions/shared/resources.ts';
import { BODY_TRANSFER_TIMEOUT_MS } from '../../functions/shared/limits.ts';
import { localContext } from './api-gateway-event.ts';
import { createApiServer, type BoundRoute, type ProxyHandler } from './http-server.ts';
import { installLambdaStreamingGlobals } from './lambda-streaming.ts';
import { LocalStepFunctions, type LocalFunction } from './step-functions.ts';
import { startStepFunctionsServer } from './step-functions-server.ts';
import { LOCAL_BUCKET, LOCAL_CREDENTIALS, LOCAL_REGION, localTableName, startLocalStores } from './stores.ts';
import { writeTwinFile, type TwinFile } from './twin-file.ts';

const FUNCTIONS_DIR = resolve(fileURLToPath(new URL('../../functions/', import.meta.url)));
const STATE_MACHINE_FILE = fileURLToPath(new URL('../../statemachines/workflow.asl.json', import.meta.url));
const LOCAL_ACCOUNT = '000000000000';
const LOCAL_STATE_MACHINE_ARN = `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:local-workflow`;
const localFunctionArn = (id: string) => `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${id}`;

export interface LocalTwinOptions {
  dataDir: string;
  host: string;
  /** 0 picks free ports for everything. Otherwise DynamoDB listens on port+1, S3 on port+2, Step Functions on port+3. */
  port: number;
  /** Only tests shorten this; the spec's 30 s is the default. */
  bodyTimeoutMs?: number;
  /** Only tests shorten the state machine's Retry intervals. */
  retryIntervalMs?: number;
  /** The stage prefix of the AWS-shaped URLs (`/prod/api/...`). */
  stage?: string;
  /** REST response streaming's idle limit; tests shorten it to seconds. */
  streamIdleTimeoutMs?: number;
}

/** API Gateway's idle limit on streamed responses of a REGIONAL endpoint. */
export const STREAM_IDLE_TIMEOUT_MS = 5 * 60_000;

export interface LocalTwin {
  url: string;
  twin: TwinFile;
  stepFunctions: LocalStepFunctions;
  close(): Promise<void>;
}

/**
 * The local twin: the same handlers behind the same route table, with the real AWS SDK clients
 * pointed at embedded API-compatible stores. The only difference from AWS is the environment set here.
 */
export async function startLocalTwin(options: LocalTwinOptions): Promise<LocalTwin> {
  const stores = await startLocalStores(options.dataDir, {
    dynamodb: options.port === 0 ? 0 : options.port + 1,
    s3: options.port === 0 ? 0 : options.port + 2,
  });
  const tables = Object.fromEntries(
    (Object.keys(TABLE_ENV) as TableName[]).map((table) => [table, localTableName(table)]),
  ) as Record<TableName, string>;
  const stepFunctionsPort = options.port === 0 ? 0 : options.port + 3;
  const functions: Record<string, LocalFunction> = {};
  const stepFunctions = new LocalStepFunctions({
    definitionFile: STATE_MACHINE_FILE,
    stateMachineArn: LOCAL_STATE_MACHINE_ARN,
    substitutions: {
      Partition: 'aws',
      ...Object.fromEntries(taskFunctions.flatMap((task) => (task.arnSubstitution ? [[task.arnSubstitution, localFunctionArn(task.id)]] : []))),
    },
    functions,
    dataDir: options.dataDir,
    executionEndedSubscribers: () =>
      taskFunctions.filter((task) => (task as { trigger?: string }).trigger === 'executionEnded').map((task) => functions[localFunctionArn(task.id)]!),
    retryIntervalMs: options.retryIntervalMs,
  });
  const stepFunctionsServer = await startStepFunctionsServer(stepFunctions, stepFunctionsPort);
  configureEnvironment(stores.dynamodbEndpoint, stores.s3Endpoint, stepFunctionsServer.endpoint, tables);
  installLambdaStreamingGlobals();

  for (const task of taskFunctions) {
    const module = (await import(pathToFileURL(join(FUNCTIONS_DIR, task.handler)).href)) as {
      handler: (event: unknown, context: ReturnType<typeof localContext>) => Promise<unknown>;
    };
    functions[localFunctionArn(task.id)] = (payload) => module.handler(payload, localContext(task.id, task.timeoutSeconds * 1000));
  }
  const bound: BoundRoute[] = [];
  for (const route of routes) {
    const module = (await import(pathToFileURL(join(FUNCTIONS_DIR, route.handler)).href)) as { handler: ProxyHandler };
    bound.push({ route, handler: module.handler });
  }
  stepFunctions.resume();
  const server = createApiServer(bound, {
    bodyTimeoutMs: options.bodyTimeoutMs ?? BODY_TRANSFER_TIMEOUT_MS,
    stage: options.stage ?? API_STAGE,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? STREAM_IDLE_TIMEOUT_MS,
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolveListen());
  });
  const url = `http://${options.host}:${(server.address() as AddressInfo).port}`;
  const twin: TwinFile = {
    pid: process.pid,
    api_url: url,
    dynamodb_endpoint: stores.dynamodbEndpoint,
    s3_endpoint: stores.s3Endpoint,
    step_functions_endpoint: stepFunctionsServer.endpoint,
    state_machine_arn: LOCAL_STATE_MACHINE_ARN,
    region: LOCAL_REGION,
    tables,
    bucket: LOCAL_BUCKET,
  };
  writeTwinFile(options.dataDir, twin);
  return {
    url,
    twin,
    stepFunctions,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
      stepFunctions.close();
      stepFunctionsServer.server.closeAllConnections();
      await new Promise<void>((resolveClose) => stepFunctionsServer.server.close(() => resolveClose()));
      await stores.close();
      rmSync(join(options.dataDir, 'twin.json'), { force: true });
    },
  };
}

function configureEnvironment(
  dynamodbEndpoint: string,
  s3Endpoint: string,
  stepFunctionsEndpoint: string,
  tables: Record<TableName, string>,
): void {
  const environment: Record<string, string> = {
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: dynamodbEndpoint,
    AWS_ENDPOINT_URL_S3: s3Endpoint,
    AWS_ENDPOINT_URL_SFN: stepFunctionsEndpoint,
    [STATE_MACHINE_ENV]: LOCAL_STATE_MACHINE_ARN,
    S3_FORCE_PATH_STYLE: '1',
    [BUCKET_ENV.bodies]: LOCAL_BUCKET,
    POWERTOOLS_SERVICE_NAME: 'workflow-ingest-local',
    POWERTOOLS_METRICS_NAMESPACE: 'WorkflowIngestLocal',
    POWERTOOLS_TRACE_ENABLED: 'false',
  };
  for (const [table, name] of Object.entries(tables)) environment[TABLE_ENV[table as TableName]] = name;
  for (const [name, value] of Object.entries(environment)) process.env[name] = value;
  // Metrics are EMF lines on stdout: useful on AWS, noise in a terminal unless asked for.
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
}
