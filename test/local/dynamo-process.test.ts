import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localTableName, startDynamo } from '#lib/twin/stores.ts';

/**
 * The embedded DynamoDB runs in a child process of the twin: it must persist as before, stop with close(), and
 * never outlive the twin, even one killed with SIGKILL (nothing else would ever stop it or release its LevelDB lock).
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const STORES = new URL('../../lib/twin/stores.ts', import.meta.url).href;
let dataDir: string;

/** A zombie counts as gone: an orphan is reaped by whatever PID 1 the machine has, perhaps never in a container. */
function alive(pid: number): boolean {
  if (!existsSync('/proc')) {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function until(done: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return done();
}

async function withTable<T>(endpoint: string, use: (client: DynamoDBDocumentClient) => Promise<T>): Promise<T> {
  const client = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }));
  try {
    return await use(client);
  } finally {
    client.destroy();
  }
}

const TABLE = localTableName('links');
const keyOf = (id: string) => ({ pk: id });

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'dynamo-process-'));
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('the embedded DynamoDB in its own process', () => {
  it('serves from another process, keeps its data across close and restart, and exits on close', async () => {
    const first = await startDynamo(dataDir, 0);
    expect(first.pid).not.toBe(process.pid);
    expect(alive(first.pid)).toBe(true);
    await withTable(first.endpoint, (client) =>
      client.send(new PutCommand({ TableName: TABLE, Item: { ...keyOf('kept'), note: 'across restarts' } })),
    );
    await first.close();
    expect(alive(first.pid)).toBe(false);

    const second = await startDynamo(dataDir, 0);
    try {
      expect(second.pid).not.toBe(first.pid);
      const { Item } = await withTable(second.endpoint, (client) => client.send(new GetCommand({ TableName: TABLE, Key: keyOf('kept') })));
      expect(Item).toMatchObject({ note: 'across restarts' });
    } finally {
      await second.close();
    }
    expect(alive(second.pid)).toBe(false);
  });

  it('waits for the data directory while another store still holds it, as one whose twin was just killed does', async () => {
    const holder = await startDynamo(dataDir, 0);
    await withTable(holder.endpoint, (client) =>
      client.send(new PutCommand({ TableName: TABLE, Item: { ...keyOf('handed-over'), note: 'from the holder' } })),
    );
    const waiting = startDynamo(dataDir, 0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await holder.close();
    const next = await waiting;
    try {
      const { Item } = await withTable(next.endpoint, (client) =>
        client.send(new GetCommand({ TableName: TABLE, Key: keyOf('handed-over') })),
      );
      expect(Item).toMatchObject({ note: 'from the holder' });
    } finally {
      await next.close();
    }
  });

  it('exits, releasing its data directory, when the process that started it is killed with SIGKILL', async () => {
    const script = `
      const { startDynamo } = await import(${JSON.stringify(STORES)});
      const dynamo = await startDynamo(${JSON.stringify(dataDir)}, 0);
      console.log(JSON.stringify({ pid: dynamo.pid, endpoint: dynamo.endpoint }));`;
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const started = await new Promise<{ pid: number; endpoint: string }>((resolve, reject) => {
      let output = '';
      parent.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('\n')) resolve(JSON.parse(output.split('\n')[0]!));
      });
      parent.once('exit', (code) => reject(new Error(`the parent exited first (${code})`)));
    });
    await withTable(started.endpoint, (client) =>
      client.send(new PutCommand({ TableName: TABLE, Item: { ...keyOf('orphan'), note: 'written before the kill' } })),
    );
    expect(alive(started.pid)).toBe(true);

    const parentGone = new Promise((resolve) => parent.once('exit', resolve));
    parent.kill('SIGKILL');
    await parentGone;
    expect(await until(() => !alive(started.pid))).toBe(true);

    const next = await startDynamo(dataDir, 0);
    try {
      const { Item } = await withTable(next.endpoint, (client) => client.send(new GetCommand({ TableName: TABLE, Key: keyOf('orphan') })));
      expect(Item).toMatchObject({ note: 'written before the kill' });
    } finally {
      await next.close();
    }
  });
});
