import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalTwin } from '#lib/twin/twin.ts';

/**
 * `npm start` with a PORT that leaves no room for the ports after it (the twin takes PORT to PORT+8) stops before
 * anything starts, naming the ports it needs, instead of failing half-way when a stand-in cannot listen.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'twin-port-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function start(port: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'bin/local.ts'],
      { cwd: ROOT, env: { ...process.env, PORT: port, DATA_DIR: dataDir, POWERTOOLS_LOG_LEVEL: 'SILENT' } },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

describe('npm start with a PORT too high for its ports', () => {
  it('refuses PORT=65533 at once, exit 1, naming every port it would need', async () => {
    const started = await start('65533');
    expect(started.code).toBe(1);
    expect(started.stderr).toContain(
      "PORT 65533 leaves no room for the twin's ports: it takes PORT to PORT+9 (API 65533, DynamoDB 65534, S3 65535, Step Functions 65536",
    );
    // The webhook API's HTTP API has a port of its own, the last.
    expect(started.stderr).toContain('CloudWatch 65541, Webhook API 65542) and ports end at 65535');
    expect(started.stderr).toContain('use 1 to 65526, or 0 for free ports');
    expect(started.stdout).not.toContain('Local twin listening');
  }, 120_000);

  it('refuses the same port in startLocalTwin, before any store starts', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'twin-port-'));
    try {
      await expect(startLocalTwin({ dataDir: fresh, host: '127.0.0.1', port: 65533 })).rejects.toThrow(
        "PORT 65533 leaves no room for the twin's ports",
      );
      expect(readdirSync(fresh)).toEqual([]);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});
