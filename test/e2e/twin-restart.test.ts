import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { runCli } from '#lib/admin/cli.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/stores.ts';
import { readLiveTwinFile } from '#lib/twin/twin-file.ts';
import { callEvent } from '../support/events.ts';
import { http, postJson } from '../support/http.ts';
import { WORKFLOW_FIXTURES } from '../support/published.ts';

/**
 * `npm start` killed with SIGKILL and started again on the same data directory: on AWS executions, task tokens,
 * timers and accepted events are durable, so on the twin they must be too.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
let dataDir: string;
let child: ChildProcess | undefined;

/** Starts `npm start` and answers the base URLs of its two APIs once its twin file says it is up. */
async function startTwinProcess(): Promise<{ url: string; webhookUrl: string }> {
  const started = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir, POWERTOOLS_LOG_LEVEL: 'SILENT' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  child = started;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const twin = readLiveTwinFile(dataDir);
    if (twin && twin.pid === started.pid) return { url: twin.api_url, webhookUrl: twin.webhook_url };
    if (Date.now() > deadline || started.exitCode !== null) throw new Error('npm start did not come up');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function killHard(): Promise<void> {
  const running = child!;
  const exited = new Promise((resolve) => running.once('exit', resolve));
  running.kill('SIGKILL');
  await exited;
}

async function admin(...argv: string[]) {
  const result = await runCli([...argv, '--json']);
  if (result.exitCode !== 0) throw new Error(`admin ${argv.join(' ')}: ${result.stdout}`);
  return JSON.parse(result.stdout) as Record<string, any>;
}

/** The executions table of the running twin, read with the SDK as any client would. */
async function scanExecutions(): Promise<Record<string, any>[]> {
  const twin = readLiveTwinFile(dataDir)!;
  const client = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
  );
  try {
    const { Items } = await client.send(new ScanCommand({ TableName: twin.tables.executions }));
    return Items ?? [];
  } finally {
    client.destroy();
  }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'twin-restart-'));
  process.env.DATA_DIR = dataDir;
});

afterAll(async () => {
  if (child && child.exitCode === null) await killHard();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a kill -9 of npm start loses nothing', () => {
  it('resumes an execution waiting for approval and an execution inside a wait, and keeps acknowledged webhook events', async () => {
    let apis = await startTwinProcess();
    await admin('publish', WORKFLOW_FIXTURES);
    const key = (await admin('keys', 'create', '--name', 'restart', '--preset', 'full')).key as string;
    const link = await admin('links', 'issue', '--type', 'calls');
    await admin('links', 'bind', link.link_id);
    const published = (path: string, method = 'GET', body?: unknown) =>
      http(`${apis.url}/prod/api/v1/published${path}`, {
        method,
        headers: { authorization: `Bearer ${key}` },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    const event = callEvent();
    const accepted = await postJson(`${apis.webhookUrl}/api/v1/webhooks/${link.token}/events`, event);
    expect(accepted.status).toBe(201);

    const waiting = await published('/workflows/support-bot/execute', 'POST', { user_id: 'u1', input: { message: 'restart me' } });
    expect(waiting.body).toMatchObject({ status: 'interrupted' });
    const approvalRun = waiting.body.execution_id as string;

    // A blocking execute whose execution sits in a 3-second Wait when the process dies; its connection dies with it.
    void published('/workflows/router/execute', 'POST', {
      user_id: 'u1',
      input: { kind: 'slow' },
      overrides: { pause: { seconds: 3 } },
    }).catch(() => undefined);
    const listed = await until(
      () => scanExecutions(),
      (items) => items.some((item) => item.workflow_id === 'router' && item.status === 'running'),
    );
    const waitRun = listed.find((item) => item.workflow_id === 'router' && item.status === 'running')!.execution_id as string;

    await killHard();
    apis = await startTwinProcess();

    const approved = await published(`/executions/${approvalRun}/approve`, 'POST', { feedback: 'after the restart' });
    expect(approved.status).toBe(200);
    const finished = await until(
      () => published(`/executions/${approvalRun}`),
      (response) => response.body.status === 'completed',
    );
    expect(finished.body).toMatchObject({ status: 'completed', output: 'You said: restart me', pending_approval: null });

    const woke = await until(
      () => published(`/executions/${waitRun}`),
      (response) => response.body.status === 'completed',
    );
    expect(woke.body).toMatchObject({ status: 'completed', output: 'waited' });

    const repeated = await postJson(`${apis.webhookUrl}/api/v1/webhooks/${link.token}/events`, event);
    expect(repeated.status).toBe(200);
    expect(repeated.body).toMatchObject({ status: 'duplicate', event_id: accepted.body.event_id });
    // Two starts of npm start (a whole twin each, compiling its functions on first use) and the waits between them:
    // about 15 s on a quiet machine, much more beside a benchmark.
  }, 180_000);
});
