import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TableName } from '#shared/resources.ts';

/**
 * `$DATA_DIR/twin.json`: where a running local twin can be reached, so the admin CLI
 * talks to the same embedded stores instead of opening the (locked) data files itself.
 * Every endpoint is an IAM front door: sign with the operator's credentials (LOCAL_CREDENTIALS) and `region`.
 */
export interface TwinFile {
  pid: number;
  /** The Published Workflow API (its REST API's stage path optional, as behind a custom domain). */
  api_url: string;
  /** The webhook API (an HTTP API: its own host, no stage path). */
  webhook_url: string;
  dynamodb_endpoint: string;
  s3_endpoint: string;
  step_functions_endpoint: string;
  ssm_endpoint: string;
  /**
   * The Bedrock Runtime front door, where the step function's client points (its AWS_ENDPOINT_URL_BEDROCK_RUNTIME):
   * `admin verify` calls each allowed model through it, as it calls the region's endpoint on AWS. It speaks HTTP/1.1,
   * as the product's client does (functions/shared/clients/bedrock.ts): give a client the SDK's NodeHttpHandler.
   */
  bedrock_endpoint: string;
  /**
   * Model id → the application inference profile ARN the twin created for it: exactly the step function's
   * BEDROCK_INFERENCE_PROFILES (on AWS a stack output). New ARNs at every start, as after a stack replacement.
   */
  inference_profiles: Record<string, string>;
  /** Cost Explorer's front door (cost allocation tags only): whether the stack's `Project` tag is active for the budget. */
  cost_explorer_endpoint: string;
  /** Lambda's front door (GetAccountSettings only): the account's concurrency quota and the functions the twin hosts. */
  lambda_endpoint: string;
  /**
   * CloudWatch's front door (alarms only: DescribeAlarms, SetAlarmState, DescribeAlarmHistory): `admin verify --alarms`
   * sets one of the stack's alarms to ALARM there and reads whether its action reached the alarm topic.
   */
  cloudwatch_endpoint: string;
  /** Where projects' tool secrets are kept in the SSM stand-in. */
  secrets_prefix: string;
  /** The workflow state machine (executions and their callbacks). */
  state_machine_arn: string;
  /** The collection state machine, which `admin collect` starts a task's sweep on. */
  collection_state_machine_arn: string;
  region: string;
  tables: Record<TableName, string>;
  bucket: string;
}

const FILE_NAME = 'twin.json';

/**
 * Which data directory the twin listening on a port serves, under the machine's temporary directory: the admin
 * CLI, run with another DATA_DIR, would otherwise write to files that twin never reads and print its URLs.
 */
const PORTS_DIR = join(tmpdir(), 'workflow-ingest-twins');
const portFile = (port: number) => join(PORTS_DIR, `${port}.json`);

export function writeTwinFile(dataDir: string, twin: TwinFile): void {
  writeFileSync(join(dataDir, FILE_NAME), `${JSON.stringify(twin, null, 2)}\n`);
  mkdirSync(PORTS_DIR, { recursive: true });
  writeFileSync(portFile(Number(new URL(twin.api_url).port)), JSON.stringify({ pid: twin.pid, data_dir: dataDir }));
}

export function removeTwinFile(dataDir: string, twin: TwinFile): void {
  rmSync(join(dataDir, FILE_NAME), { force: true });
  rmSync(portFile(Number(new URL(twin.api_url).port)), { force: true });
}

/** The data directory of a twin still running on `port`, or undefined. */
export function liveTwinOnPort(port: number): { dataDir: string } | undefined {
  let entry: { pid: number; data_dir: string };
  try {
    entry = JSON.parse(readFileSync(portFile(port), 'utf8')) as { pid: number; data_dir: string };
  } catch {
    return undefined;
  }
  return isRunning(entry.pid) ? { dataDir: entry.data_dir } : undefined;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The twin file of a process that is still running, or undefined. */
export function readLiveTwinFile(dataDir: string): TwinFile | undefined {
  let twin: TwinFile;
  try {
    twin = JSON.parse(readFileSync(join(dataDir, FILE_NAME), 'utf8')) as TwinFile;
  } catch {
    return undefined;
  }
  return isRunning(twin.pid) ? twin : undefined;
}
