import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm start`'s `TWIN_FAULTS`: a value it does not understand stops the start, naming the setting and the part; one it
 * does is shown with its seed, so that a session can be replayed.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
/** Node, tsx and the stores starting on a loaded machine. */
const DEADLINE_MS = 120_000;
const dirs: string[] = [];
const running = new Set<ReturnType<typeof spawn>>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
  dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
});

function startTwin(env: Record<string, string>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'twin-faults-'));
  dirs.push(dataDir);
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir, POWERTOOLS_LOG_LEVEL: 'SILENT', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  /** Resolves with stdout once it holds `text` (the twin prints its banner when it is up). */
  const printed = (text: string) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        if (stdout.includes(text)) resolve(stdout);
      };
      child.stdout.on('data', check);
      void exited.then(() => reject(new Error(`npm start exited before printing ${text}: ${stderr}`)));
      check();
    });
  return { child, exited, printed, output: () => ({ stdout, stderr }) };
}

describe('npm start with TWIN_FAULTS', () => {
  it.each([
    ['dynamodb:slow=0.1', {}, 'TWIN_FAULTS: "dynamodb:slow=0.1" names no fault kind'],
    ['s3:error=1.5', {}, 'TWIN_FAULTS: "s3:error=1.5" needs a rate from 0 to 1'],
    ['lambda:delay=200@0.1', {}, 'TWIN_FAULTS: "lambda:delay=200@0.1" is not lambda:delay=<N>ms@<rate>'],
    ['s3:error=0.1', { TWIN_FAULTS_SEED: 'seven' }, 'TWIN_FAULTS_SEED must be a whole number from 0 to 4294967295, got "seven"'],
    ['', {}, 'TWIN_FAULTS is set but empty'],
  ])(
    'refuses %s and exits 1 with the message',
    async (faults, env, message) => {
      const started = startTwin({ TWIN_FAULTS: faults, ...env });
      expect(await started.exited).toBe(1);
      expect(started.output().stderr).toContain(message);
      expect(started.output().stdout).not.toContain('Local twin listening');
    },
    DEADLINE_MS,
  );

  it(
    'refuses a TWIN_FAULTS_SEED without TWIN_FAULTS and exits 1',
    async () => {
      const started = startTwin({ TWIN_FAULTS_SEED: '424242' });
      expect(await started.exited).toBe(1);
      expect(started.output().stderr).toContain('TWIN_FAULTS_SEED is set but TWIN_FAULTS is not');
    },
    DEADLINE_MS,
  );

  it(
    'prints the faults and the seed that replays them',
    async () => {
      const started = startTwin({ TWIN_FAULTS: 's3:error=0.05,lambda:delay=200ms@0.1', TWIN_FAULTS_SEED: '424242' });
      const stdout = await started.printed('replays it)');
      expect(stdout).toContain('Faults:        s3:error=0.05,lambda:delay=200ms@0.1 (seed 424242: TWIN_FAULTS_SEED=424242 replays it)');
      started.child.kill('SIGTERM');
      expect(await started.exited).toBe(0);
    },
    DEADLINE_MS,
  );
});
