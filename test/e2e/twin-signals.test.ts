import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readLiveTwinFile, type TwinFile } from '#lib/twin/twin-file.ts';

/**
 * `npm start` as a service manager or a script runs it: the signal goes to the process npm is, not to the terminal's
 * process group. The twin must end with its stores and child processes, and leave no port taken.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
/** npm, Node, tsx and the stores starting on a loaded machine. */
const DEADLINE_MS = 120_000;
const dirs: string[] = [];
/** A twin a failed test left running is stopped, so the suite leaves no process behind. */
const started: number[] = [];
afterAll(() => {
  for (const pid of started) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
});

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const portOf = (url: string) => Number(new URL(url).port);
const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('npm start and signals', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'ends on %s sent to the npm process, with its stores, and frees its ports',
    async (signal) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'twin-signal-'));
      dirs.push(dataDir);
      const npm = spawn('npm', ['start'], {
        cwd: ROOT,
        env: { ...process.env, PORT: '0', DATA_DIR: dataDir, POWERTOOLS_LOG_LEVEL: 'SILENT' },
        stdio: 'ignore',
      });
      const npmExited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      const twin: TwinFile = await until('the twin to come up', () => readLiveTwinFile(dataDir));
      started.push(twin.pid);
      const ports = [twin.api_url, twin.dynamodb_endpoint, twin.s3_endpoint, twin.step_functions_endpoint, twin.ssm_endpoint].map(portOf);
      expect(await Promise.all(ports.map(accepts))).toEqual(ports.map(() => true));

      npm.kill(signal);
      await npmExited;

      await until('the twin process to end', () => (isAlive(twin.pid) ? undefined : true));
      expect(await Promise.all(ports.map(accepts))).toEqual(ports.map(() => false));
    },
    DEADLINE_MS * 2,
  );
});
