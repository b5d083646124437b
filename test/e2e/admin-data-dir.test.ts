import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/** The CLI and the twin agree on where the data is, or the CLI says why not. */
let twin: TestTwin;
const elsewhere = mkdtempSync(join(tmpdir(), 'admin-elsewhere-'));
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(async () => {
  await twin?.close();
  rmSync(elsewhere, { recursive: true, force: true });
});

/** The CLI as run from a terminal with these variables (the twin's own stay as they were for other tests). */
async function cliWith(env: { DATA_DIR: string; PORT: string }, ...argv: string[]) {
  const before = { DATA_DIR: process.env.DATA_DIR, PORT: process.env.PORT };
  Object.assign(process.env, env);
  try {
    return await runCli(argv);
  } finally {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

describe('the admin CLI and the running twin', () => {
  it('refuses (exit 2) to act on another DATA_DIR than the twin on its port serves, naming both and the variable', async () => {
    const port = new URL(twin.url).port;
    const result = await cliWith({ DATA_DIR: elsewhere, PORT: port }, 'links', 'issue', '--type', 'calls', '--json');
    expect(result.exitCode).toBe(2);
    expect(JSON.parse(result.stdout).error).toBe(
      `the twin on port ${port} serves DATA_DIR=${twin.dataDir}, but this command would use DATA_DIR=${elsewhere}; run it with DATA_DIR=${twin.dataDir} (or PORT set to this directory's twin)`,
    );
  });

  it('says on stderr when it opens a data directory itself, and not when the twin serves it', async () => {
    const alone = await cliWith({ DATA_DIR: elsewhere, PORT: '3998' }, 'links', 'list', '--json');
    expect(alone.exitCode).toBe(0);
    expect(alone.stderr).toBe(
      `note: no twin is running for DATA_DIR=${elsewhere}: opened its data directly (URLs name port 3998, where npm start will serve it)\n`,
    );
    const served = await cliWith({ DATA_DIR: twin.dataDir, PORT: new URL(twin.url).port }, 'links', 'list', '--json');
    expect(served.exitCode).toBe(0);
    expect(served.stderr).toBe('');
  });
});
