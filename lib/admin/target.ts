import { resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableName } from '#shared/resources.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localTableName } from '#lib/twin/local-names.ts';
import { liveTwinOnPort, readLiveTwinFile } from '#lib/twin/twin-file.ts';
import { UsageError } from './usage-error.ts';
import { API_URL_OUTPUT, BUCKET_OUTPUTS, COLLECTION_STATE_MACHINE_OUTPUT, SECRETS_PREFIX_OUTPUT, TABLE_OUTPUTS } from '#lib/cdk/stack-outputs.ts';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SFNClient } from '@aws-sdk/client-sfn';

/** Where the admin CLI acts: a deployed stack, a running local twin, or the local data directory directly. */
export interface AdminTarget {
  dynamo: DynamoDBDocumentClient;
  tables: Record<TableName, string>;
  publicBaseUrl: string;
  /** The bucket and the collection state machine, for the collection commands; locally only while the twin runs. */
  services(): Promise<{ s3: S3Client; bucket: string; sfn: SFNClient; stateMachineArn: string }>;
  /** Where projects' tool secrets live; locally only while the twin runs (its SSM stand-in). */
  secrets(): Promise<{ ssm: SSMClient; prefix: string }>;
  /** A deployed stack (--stack), or the local twin. */
  deployed: boolean;
  /** What the operator should know about where the command acts (the CLI opened the data directory itself). */
  notice?: string;
  close(): Promise<void>;
}

const documentClient = (client: DynamoDBClient) =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });

export async function resolveTarget(options: { stack?: string; region?: string }): Promise<AdminTarget> {
  return options.stack ? deployedTarget(options.stack, options.region) : localTarget();
}

async function deployedTarget(stackName: string, region: string | undefined): Promise<AdminTarget> {
  // Each SDK client is loaded by the command that uses it: a call pays only for its own.
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const cloudFormation = new CloudFormationClient({ region });
  const { Stacks } = await cloudFormation.send(new DescribeStacksCommand({ StackName: stackName }));
  const outputs = new Map((Stacks?.[0]?.Outputs ?? []).map((output) => [output.OutputKey, output.OutputValue]));
  const output = (key: string) => {
    const value = outputs.get(key);
    if (!value) throw new Error(`Stack ${stackName} has no output ${key}; is it this product's stack?`);
    return value;
  };
  const tables = Object.fromEntries(
    Object.entries(TABLE_OUTPUTS).map(([table, key]) => [table, output(key)]),
  ) as Record<TableName, string>;
  const client = new DynamoDBClient({ region });
  let services: Awaited<ReturnType<AdminTarget['services']>> | undefined;
  let secrets: Awaited<ReturnType<AdminTarget['secrets']>> | undefined;
  return {
    dynamo: documentClient(client),
    tables,
    publicBaseUrl: output(API_URL_OUTPUT),
    secrets: async () => (secrets ??= { ssm: new (await import('@aws-sdk/client-ssm')).SSMClient({ region }), prefix: output(SECRETS_PREFIX_OUTPUT) }),
    deployed: true,
    services: async () =>
      (services ??= {
        s3: new (await import('@aws-sdk/client-s3')).S3Client({ region }),
        bucket: output(BUCKET_OUTPUTS.bodies),
        sfn: new (await import('@aws-sdk/client-sfn')).SFNClient({ region }),
        stateMachineArn: output(COLLECTION_STATE_MACHINE_OUTPUT),
      }),
    close: async () => {
      client.destroy();
      services?.s3.destroy();
      services?.sfn.destroy();
      secrets?.ssm.destroy();
    },
  };
}

async function localTarget(): Promise<AdminTarget> {
  const dataDir = resolve(process.env.DATA_DIR ?? '.local/data');
  const port = Number(process.env.PORT ?? 3000);
  const twin = readLiveTwinFile(dataDir);
  if (!twin) {
    // A twin answering on this port from another directory would never see what the command writes here.
    const other = liveTwinOnPort(port);
    if (other && resolve(other.dataDir) !== dataDir) {
      throw new UsageError(
        `the twin on port ${port} serves DATA_DIR=${other.dataDir}, but this command would use DATA_DIR=${dataDir}; run it with DATA_DIR=${other.dataDir} (or PORT set to this directory's twin)`,
      );
    }
  }
  // A running twin holds the data files; otherwise the CLI opens them itself for the length of one command.
  const embedded = twin ? undefined : await (await import('#lib/twin/stores.ts')).startDynamo(dataDir, 0);
  const client = new DynamoDBClient({
    endpoint: twin?.dynamodb_endpoint ?? embedded!.endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const tables = Object.fromEntries(
    Object.keys(TABLE_OUTPUTS).map((table) => [table, twin?.tables[table as TableName] ?? localTableName(table as TableName)]),
  ) as Record<TableName, string>;
  let services: Awaited<ReturnType<AdminTarget['services']>> | undefined;
  let secrets: Awaited<ReturnType<AdminTarget['secrets']>> | undefined;
  return {
    dynamo: documentClient(client),
    tables,
    publicBaseUrl: twin?.api_url ?? `http://127.0.0.1:${port}`,
    deployed: false,
    notice: twin ? undefined : `no twin is running for DATA_DIR=${dataDir}: opened its data directly (URLs name port ${port}, where npm start will serve it)`,
    async secrets() {
      if (!twin) throw new Error('This command needs the local twin running (npm start)');
      const { SSMClient } = await import('@aws-sdk/client-ssm');
      return (secrets ??= {
        ssm: new SSMClient({ region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, endpoint: twin.ssm_endpoint }),
        prefix: twin.secrets_prefix,
      });
    },
    async services() {
      if (!twin) throw new Error('This command needs the local twin running (npm start)');
      const [{ S3Client }, { SFNClient }] = await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/client-sfn')]);
      const config = { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
      return (services ??= {
        s3: new S3Client({ ...config, endpoint: twin.s3_endpoint, forcePathStyle: true }),
        bucket: twin.bucket,
        sfn: new SFNClient({ ...config, endpoint: twin.step_functions_endpoint }),
        stateMachineArn: twin.collection_state_machine_arn,
      });
    },
    async close() {
      client.destroy();
      services?.s3.destroy();
      services?.sfn.destroy();
      secrets?.ssm.destroy();
      await embedded?.close();
    },
  };
}
