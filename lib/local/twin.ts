import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { routes } from '../../functions/routes.ts';
import { BUCKET_ENV, TABLE_ENV, type TableName } from '../../functions/shared/resources.ts';
import { BODY_TRANSFER_TIMEOUT_MS } from '../../functions/shared/limits.ts';
import { createApiServer, type BoundRoute, type ProxyHandler } from './http-server.ts';
import { LOCAL_BUCKET, LOCAL_CREDENTIALS, LOCAL_REGION, localTableName, startLocalStores } from './stores.ts';
import { writeTwinFile, type TwinFile } from './twin-file.ts';

const FUNCTIONS_DIR = resolve(fileURLToPath(new URL('../../functions/', import.meta.url)));

export interface LocalTwinOptions {
  dataDir: string;
  host: string;
  /** 0 picks free ports for everything. Otherwise DynamoDB listens on port+1 and S3 on port+2. */
  port: number;
  /** Only tests shorten this; the spec's 30 s is the default. */
  bodyTimeoutMs?: number;
}

export interface LocalTwin {
  url: string;
  twin: TwinFile;
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
  configureEnvironment(stores.dynamodbEndpoint, stores.s3Endpoint, tables);

  const bound: BoundRoute[] = [];
  for (const route of routes) {
    const module = (await import(pathToFileURL(join(FUNCTIONS_DIR, route.handler)).href)) as { handler: ProxyHandler };
    bound.push({ route, handler: module.handler });
  }
  const server = createApiServer(bound, { bodyTimeoutMs: options.bodyTimeoutMs ?? BODY_TRANSFER_TIMEOUT_MS });
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
    region: LOCAL_REGION,
    tables,
    bucket: LOCAL_BUCKET,
  };
  writeTwinFile(options.dataDir, twin);
  return {
    url,
    twin,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
      await stores.close();
      rmSync(join(options.dataDir, 'twin.json'), { force: true });
    },
  };
}

function configureEnvironment(dynamodbEndpoint: string, s3Endpoint: string, tables: Record<TableName, string>): void {
  const environment: Record<string, string> = {
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: dynamodbEndpoint,
    AWS_ENDPOINT_URL_S3: s3Endpoint,
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
