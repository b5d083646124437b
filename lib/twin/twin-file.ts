import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TableName } from '#shared/resources.ts';

/**
 * `$DATA_DIR/twin.json`: where a running local twin can be reached, so the admin CLI
 * talks to the same embedded stores instead of opening the (locked) data files itself.
 */
export interface TwinFile {
  pid: number;
  api_url: string;
  dynamodb_endpoint: string;
  s3_endpoint: string;
  step_functions_endpoint: string;
  ssm_endpoint: string;
  /** Where projects' tool secrets are kept in the SSM stand-in. */
  secrets_prefix: string;
  /** The workflow state machine (runs and their callbacks). */
  state_machine_arn: string;
  /** The collection state machine, which `admin collect` starts a task's run on. */
  collection_state_machine_arn: string;
  region: string;
  tables: Record<TableName, string>;
  bucket: string;
}

const FILE_NAME = 'twin.json';

export function writeTwinFile(dataDir: string, twin: TwinFile): void {
  writeFileSync(join(dataDir, FILE_NAME), `${JSON.stringify(twin, null, 2)}\n`);
}

/** The twin file of a process that is still running, or undefined. */
export function readLiveTwinFile(dataDir: string): TwinFile | undefined {
  let twin: TwinFile;
  try {
    twin = JSON.parse(readFileSync(join(dataDir, FILE_NAME), 'utf8')) as TwinFile;
  } catch {
    return undefined;
  }
  try {
    process.kill(twin.pid, 0);
    return twin;
  } catch {
    return undefined;
  }
}
