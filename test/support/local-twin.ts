import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { runCli } from '#lib/admin/cli.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/stores.ts';
import { LINK_CACHE_MS } from '#shared/limits.ts';
import { installLambdaStreamingGlobals } from '#lib/twin/lambda-streaming.ts';
import { startLocalTwin, type LocalTwin, type LocalTwinOptions } from '#lib/twin/twin.ts';
import { functionIdOf, routes } from '#functions/routes.ts';
import { taskFunctions } from '#functions/task-functions.ts';

export interface TestTwin extends LocalTwin {
  dataDir: string;
  /** SDK clients on the twin's embedded stores, for asserting on stored state. */
  dynamo: DynamoDBDocumentClient;
  s3: S3Client;
  admin(...argv: string[]): Promise<Record<string, any>>;
  /**
   * Waits, on the twin's own count, until no invocation of `functionIds` (every function by default) is running: an
   * invocation writes its usage as it ends, after its answer. Past `timeoutMs` it fails, naming those still running.
   */
  settled(functionIds?: readonly string[], timeoutMs?: number): Promise<void>;
}

// Routes may share a function (an API's documentation routes do): each function once.
const EVERY_FUNCTION = [...new Set(routes.map(functionIdOf)), ...taskFunctions.map((task) => task.id)];

/** Starts the real local twin (embedded DynamoDB and S3, same handlers) on free ports in a fresh data directory. */
export async function startTestTwin(options: Omit<LocalTwinOptions, 'dataDir' | 'host' | 'port'> = {}): Promise<TestTwin> {
  const dataDir = mkdtempSync(join(tmpdir(), 'twin-'));
  const twin = await startLocalTwin({ ...options, dataDir, host: '127.0.0.1', port: 0 });
  process.env.DATA_DIR = dataDir;
  // Handler tests import handlers into this process: they get an environment allowed everything, on the front doors.
  Object.assign(process.env, twin.operatorEnvironment);
  installLambdaStreamingGlobals();
  const dynamo = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
  );
  const s3 = new S3Client({ endpoint: twin.twin.s3_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
  async function settled(functionIds: readonly string[] = EVERY_FUNCTION, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const running = functionIds.filter((id) => twin.invocationsInFlight(id) > 0);
      if (running.length === 0) return;
      if (Date.now() > deadline) throw new Error(`invocations of ${running.join(', ')} still running after ${timeoutMs / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  return {
    ...twin,
    dataDir,
    dynamo,
    s3,
    async admin(...argv) {
      const result = await runCli([...argv, '--json']);
      const output = JSON.parse(result.stdout) as Record<string, any>;
      if (result.exitCode !== 0) throw new Error(`admin ${argv.join(' ')} failed: ${output.error}`);
      return output;
    },
    settled,
    async close() {
      // Invocations still writing their usage would find the stores gone; one a test left running is closed anyway.
      await settled(EVERY_FUNCTION, 10_000).catch(() => undefined);
      dynamo.destroy();
      s3.destroy();
      await twin.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A link the administrator has issued and bound, ready to accept events. */
export async function boundLink(twin: TestTwin, type: 'calls' | 'dialogs', allowHosts?: string) {
  const issued = await twin.admin('links', 'issue', '--type', type, ...(allowHosts ? ['--allow-hosts', allowHosts] : []));
  const bound = await twin.admin('links', 'bind', issued.link_id);
  return { linkId: issued.link_id as string, token: issued.token as string, sourceId: bound.source_id as string };
}

/** Runs an admin command that must be refused and answers its exit code and the one JSON error object it printed. */
export async function refusedAdmin(...argv: string[]): Promise<{ exitCode: number; error: string }> {
  const result = await runCli([...argv, '--json']);
  return { exitCode: result.exitCode, error: (JSON.parse(result.stdout) as { error: string }).error };
}

/**
 * Waits until a link a webhook function read before `sinceMs` has left its memory (LINK_CACHE_MS): a change made
 * to a link behind the function's back (a revocation, a deadline) applies to a warm function from then on.
 */
export async function afterLinkCache(sinceMs = Date.now()): Promise<void> {
  const left = sinceMs + LINK_CACHE_MS + 20 - Date.now();
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
}
