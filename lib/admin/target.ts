import { resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableName } from '#shared/resources.ts';
import { MAX_OPEN_STREAMS_ENV, parseMaxOpenStreams } from '#shared/http/stream-settings.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, LOCAL_STACK_NAME, localTableName } from '#lib/twin/local-names.ts';
import { liveTwinOnPort, readLiveTwinFile } from '#lib/twin/twin-file.ts';
import { twinPortOf } from '#lib/twin/twin-ports.ts';
import { UsageError } from './usage-error.ts';
import {
  API_URL_OUTPUT,
  WEBHOOK_API_URL_OUTPUT,
  BEDROCK_PROFILES_OUTPUT,
  BUCKET_OUTPUTS,
  COLLECTION_STATE_MACHINE_OUTPUT,
  MAX_OPEN_STREAMS_OUTPUT,
  OPERATIONS_MODE_OUTPUT,
  SECRETS_PREFIX_OUTPUT,
  TABLE_OUTPUTS,
} from '#lib/cdk/stack-outputs.ts';
import { OPERATIONS_MODES, type OperationsMode } from '#lib/cdk/stack-outputs.ts';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SFNClient } from '@aws-sdk/client-sfn';
import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import type { CostExplorerClient } from '@aws-sdk/client-cost-explorer';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { alarmNamePrefix } from '#lib/cdk/alarm-topic-policy.ts';
import { stackAlarms, type StackAlarms } from './stack-alarms.ts';

/** What `admin verify` needs of a deployment besides its tables: where it runs, its models, and three SDK clients. */
export interface VerifyServices {
  /** Where the checks act, for the report: the stack and its region, or the twin's data directory. */
  description: string;
  region: string;
  /**
   * The deployment's Bedrock allow-list: model id → its application inference profile's ARN; undefined with `missing`
   * saying why (a stack deployed before it had the output).
   */
  inferenceProfiles?: Record<string, string>;
  missing?: string;
  bedrock: BedrockRuntimeClient;
  /** In us-east-1 on AWS, where Cost Explorer answers. */
  costExplorer: CostExplorerClient;
  lambda: LambdaClient;
  /** The stack's alarms, for `verify --alarms`. */
  alarms: StackAlarms;
  /**
   * Streams the deployment serves at once, all keys together: the stack's `MaxOpenStreams` output (the default for a
   * stack without it), the twin's MAX_OPEN_STREAMS as `npm start` reads it.
   */
  maxOpenStreams?: number;
}

/** Cost Explorer's one endpoint: its API is served from us-east-1 whatever the stack's region. */
const COST_EXPLORER_REGION = 'us-east-1';

/** The three SDK modules `admin verify` uses, loaded together when it first asks for them. */
async function verifyClientClasses() {
  const [{ BedrockRuntimeClient }, { CostExplorerClient }, { LambdaClient }, { NodeHttpHandler }] = await Promise.all([
    import('@aws-sdk/client-bedrock-runtime'),
    import('@aws-sdk/client-cost-explorer'),
    import('@aws-sdk/client-lambda'),
    import('@smithy/node-http-handler'),
  ]);
  return {
    // Over HTTP/1.1, as the product's own client (functions/shared/clients/bedrock.ts): ConverseStream answers on one
    // response, and the twin's Bedrock front door speaks HTTP/1.1 only.
    bedrock: (config: { region: string; endpoint?: string; credentials?: typeof LOCAL_CREDENTIALS }) =>
      new BedrockRuntimeClient({ requestHandler: new NodeHttpHandler({ connectionTimeout: 5_000 }), ...config }),
    CostExplorerClient,
    LambdaClient,
  };
}

/** The stack output's JSON (model id → ARN), or why it cannot be used. */
function profilesOf(text: string | undefined): { inferenceProfiles?: Record<string, string>; missing?: string } {
  if (text === undefined)
    return {
      missing: `the stack has no output ${BEDROCK_PROFILES_OUTPUT}: it was deployed by an earlier version; redeploy it (npx cdk deploy)`,
    };
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null && Object.values(parsed).every((arn) => typeof arn === 'string'))
      return { inferenceProfiles: parsed as Record<string, string> };
  } catch {
    // reported below
  }
  return { missing: `the stack output ${BEDROCK_PROFILES_OUTPUT} is not a JSON object of model ids and profile ARNs` };
}

/** Where the admin CLI acts: a deployed stack, a running local twin, or the local data directory directly. */
export interface AdminTarget {
  dynamo: DynamoDBDocumentClient;
  tables: Record<TableName, string>;
  /** The Published Workflow API's base URL (`ApiUrl`). */
  publicBaseUrl: string;
  /** The webhook API's base URL (`WebhookApiUrl`), which link URLs start with. */
  webhookBaseUrl: string;
  /** The bucket and the collection state machine, for the collection commands; locally only while the twin runs. */
  services(): Promise<{ s3: S3Client; bucket: string; sfn: SFNClient; stateMachineArn: string }>;
  /** Where projects' tool secrets live; locally only while the twin runs (its SSM stand-in). */
  secrets(): Promise<{ ssm: SSMClient; prefix: string }>;
  /** What `admin verify` checks the deployment with; locally only while the twin runs (its stand-ins). */
  verify(): Promise<VerifyServices>;
  /** A deployed stack (--stack), or the local twin. */
  deployed: boolean;
  /** The deployment's region: the stack's as the SDK finds it (--region, AWS_REGION, the profile), the twin's us-east-1. */
  region: string;
  /** The deployment's `operations` setting, which decides its fixed monthly items; the twin prices the full stack. */
  operationsMode: OperationsMode;
  /** What the operator should know about where the command acts (the CLI opened the data directory itself). */
  notice?: string;
  close(): Promise<void>;
}

const documentClient = (client: DynamoDBClient) =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });

export async function resolveTarget(options: { stack?: string; region?: string }): Promise<AdminTarget> {
  return options.stack ? deployedTarget(options.stack, options.region) : localTarget();
}

/** A stack's OperationsMode output as the cost report prices it; a stack without the output has every alarm (full). */
export function operationsModeOf(stackName: string, value: string | undefined): OperationsMode {
  if (value === undefined) return 'full';
  if ((OPERATIONS_MODES as readonly string[]).includes(value)) return value as OperationsMode;
  throw new Error(`Stack ${stackName} has output ${OPERATIONS_MODE_OUTPUT} ${JSON.stringify(value)}, neither full nor lean`);
}

async function deployedTarget(stackName: string, region: string | undefined): Promise<AdminTarget> {
  // Each SDK client is loaded by the command that uses it: a call pays only for its own.
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const cloudFormation = new CloudFormationClient({ region });
  // The SDK's own "Region is missing" names neither the flag nor the variable that would give it one.
  const knownRegion = await cloudFormation.config.region().catch(() => undefined);
  if (!knownRegion) {
    cloudFormation.destroy();
    throw new UsageError(`--stack ${stackName} needs its region: give --region R, or set AWS_REGION (or a region in your AWS profile)`);
  }
  const { Stacks } = await cloudFormation.send(new DescribeStacksCommand({ StackName: stackName }));
  const outputs = new Map((Stacks?.[0]?.Outputs ?? []).map((output) => [output.OutputKey, output.OutputValue]));
  const output = (key: string) => {
    const value = outputs.get(key);
    if (!value) throw new Error(`Stack ${stackName} has no output ${key}; is it this product's stack?`);
    return value;
  };
  const tables = Object.fromEntries(Object.entries(TABLE_OUTPUTS).map(([table, key]) => [table, output(key)])) as Record<TableName, string>;
  const client = new DynamoDBClient({ region });
  let services: Awaited<ReturnType<AdminTarget['services']>> | undefined;
  let secrets: Awaited<ReturnType<AdminTarget['secrets']>> | undefined;
  let verify: VerifyServices | undefined;
  return {
    dynamo: documentClient(client),
    tables,
    publicBaseUrl: output(API_URL_OUTPUT),
    webhookBaseUrl: output(WEBHOOK_API_URL_OUTPUT),
    secrets: async () =>
      (secrets ??= { ssm: new (await import('@aws-sdk/client-ssm')).SSMClient({ region }), prefix: output(SECRETS_PREFIX_OUTPUT) }),
    async verify() {
      if (verify) return verify;
      const classes = await verifyClientClasses();
      const stackRegion = await cloudFormation.config.region();
      return (verify = {
        description: `stack ${stackName} (${stackRegion})`,
        region: stackRegion,
        ...profilesOf(outputs.get(BEDROCK_PROFILES_OUTPUT)),
        bedrock: classes.bedrock({ region: stackRegion }),
        costExplorer: new classes.CostExplorerClient({ region: COST_EXPLORER_REGION }),
        lambda: new classes.LambdaClient({ region: stackRegion }),
        alarms: stackAlarms(alarmNamePrefix(stackName), { region: stackRegion }),
        maxOpenStreams: parseMaxOpenStreams(outputs.get(MAX_OPEN_STREAMS_OUTPUT), `Stack ${stackName}'s output ${MAX_OPEN_STREAMS_OUTPUT}`),
      });
    },
    deployed: true,
    region: knownRegion,
    operationsMode: operationsModeOf(stackName, outputs.get(OPERATIONS_MODE_OUTPUT)),
    services: async () =>
      (services ??= {
        s3: new (await import('@aws-sdk/client-s3')).S3Client({ region }),
        bucket: output(BUCKET_OUTPUTS.bodies),
        sfn: new (await import('@aws-sdk/client-sfn')).SFNClient({ region }),
        stateMachineArn: output(COLLECTION_STATE_MACHINE_OUTPUT),
      }),
    close: async () => {
      client.destroy();
      cloudFormation.destroy();
      services?.s3.destroy();
      services?.sfn.destroy();
      secrets?.ssm.destroy();
      destroyVerifyClients(verify);
    },
  };
}

/** Where the local twin keeps its data unless DATA_DIR says otherwise; its parent is the CLI's own directory. */
export const DEFAULT_DATA_DIR = '.local/data';

async function localTarget(): Promise<AdminTarget> {
  const dataDir = resolve(process.env.DATA_DIR ?? DEFAULT_DATA_DIR);
  const port = Number(process.env.PORT ?? 3000);
  const twin = readLiveTwinFile(dataDir);
  if (!twin) {
    // A twin answering on this port from another directory would never see what the command writes here.
    const other = liveTwinOnPort(port);
    if (other && resolve(other.dataDir) !== dataDir) {
      throw new UsageError(
        `the twin on port ${port} serves DATA_DIR=${other.dataDir}, but this command would use DATA_DIR=${dataDir}; run it with ` +
          `DATA_DIR=${other.dataDir} (or PORT set to this directory's twin)`,
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
  let verify: VerifyServices | undefined;
  return {
    dynamo: documentClient(client),
    tables,
    publicBaseUrl: twin?.api_url ?? `http://127.0.0.1:${port}`,
    webhookBaseUrl: twin?.webhook_url ?? `http://127.0.0.1:${twinPortOf(port, 'webhooks')}`,
    deployed: false,
    region: LOCAL_REGION,
    operationsMode: 'full',
    notice: twin
      ? undefined
      : `no twin is running for DATA_DIR=${dataDir}: opened its data directly (URLs name port ${port}, where npm start will serve it)`,
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
    async verify() {
      if (!twin)
        throw new Error(
          `admin verify checks a running deployment, and no twin is running for DATA_DIR=${dataDir}: start it (npm start), or name a ` +
            `stack with --stack`,
        );
      if (verify) return verify;
      const classes = await verifyClientClasses();
      // The operator's credentials, as for every store: the twin's front doors allow them everything.
      const config = { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
      return (verify = {
        description: `local twin of DATA_DIR=${dataDir} (${twin.api_url})`,
        region: LOCAL_REGION,
        inferenceProfiles: twin.inference_profiles,
        bedrock: classes.bedrock({ ...config, endpoint: twin.bedrock_endpoint }),
        costExplorer: new classes.CostExplorerClient({ ...config, endpoint: twin.cost_explorer_endpoint }),
        lambda: new classes.LambdaClient({ ...config, endpoint: twin.lambda_endpoint }),
        alarms: stackAlarms(alarmNamePrefix(LOCAL_STACK_NAME), { ...config, endpoint: twin.cloudwatch_endpoint }),
        maxOpenStreams: parseMaxOpenStreams(process.env[MAX_OPEN_STREAMS_ENV], MAX_OPEN_STREAMS_ENV),
      });
    },
    async close() {
      client.destroy();
      services?.s3.destroy();
      services?.sfn.destroy();
      secrets?.ssm.destroy();
      destroyVerifyClients(verify);
      await embedded?.close();
    },
  };
}

function destroyVerifyClients(verify: VerifyServices | undefined): void {
  verify?.bedrock.destroy();
  verify?.costExplorer.destroy();
  verify?.lambda.destroy();
  verify?.alarms.destroy();
}
