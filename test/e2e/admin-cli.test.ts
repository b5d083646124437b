import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { http } from '../support/http.ts';

const run = promisify(execFile);
/** Each call starts npm and the CLI in a process of its own: seconds quiet, many more on a loaded machine. */
const CLI_PROCESS_TIMEOUT_MS = 180_000;
const ROOT = new URL('../..', import.meta.url).pathname;

/** An operator's shell, with the twin's data directory. */
function operatorEnv(dataDir: string): NodeJS.ProcessEnv {
  return { ...process.env, DATA_DIR: dataDir, PORT: '3999' };
}

/** The CLI exactly as an operator runs it, in its own process. */
async function admin(dataDir: string, ...argv: string[]) {
  try {
    const { stdout, stderr } = await run('npm', ['run', '--silent', 'admin', '--', ...argv], {
      cwd: ROOT,
      env: operatorEnv(dataDir),
    });
    return { exitCode: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { exitCode: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('admin CLI against a running local twin', () => {
  let twin: TestTwin;
  beforeAll(async () => {
    twin = await startTestTwin();
  });
  afterAll(() => twin.close());

  it(
    'issues and binds a link the running server then accepts, printing one JSON object each time',
    async () => {
      const issued = await admin(twin.dataDir, 'links', 'issue', '--type', 'dialogs', '--json');
      const link = JSON.parse(issued.stdout);
      const bound = JSON.parse((await admin(twin.dataDir, 'links', 'bind', link.link_id, '--json')).stdout);
      const ping = await http(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/ping`);

      expect(issued.stdout.trim().split('\n')).toHaveLength(1);
      // Against the running twin the CLI has nothing to say on stderr (no SDK notice, no note about opening the data).
      expect(issued.stderr).toBe('');
      // A link's URL is on the webhook API's host, which the running twin's file names.
      expect(link).toMatchObject({
        state: 'issued',
        connector_type: 'dialogs',
        url: `${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`,
      });
      expect(bound).toEqual({ link_id: link.link_id, state: 'bound', source_id: expect.stringMatching(/^src_/) });
      expect(ping.body).toEqual({ status: 'ok', state: 'bound', connector_type: 'dialogs' });
    },
    CLI_PROCESS_TIMEOUT_MS,
  );

  it(
    'prints an error object and exits non-zero on a bad command',
    async () => {
      const result = await admin(twin.dataDir, 'links', 'issue', '--type', 'video', '--json');
      expect(result.exitCode).toBe(2);
      expect(JSON.parse(result.stdout)).toEqual({ error: 'links issue needs --type calls or --type dialogs' });
    },
    CLI_PROCESS_TIMEOUT_MS,
  );
});

describe('admin CLI with no server running', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'admin-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it(
    'opens the data directory itself, so links can be prepared before the first start',
    async () => {
      const issued = JSON.parse((await admin(dataDir, 'links', 'issue', '--type', 'calls', '--json')).stdout);
      const { links } = JSON.parse((await admin(dataDir, 'links', 'list', '--json')).stdout);
      // No twin file: the webhook API's port is the one `npm start` will take, PORT + 9 (lib/twin/twin-ports.ts).
      expect(issued.url).toMatch(/^http:\/\/127\.0\.0\.1:4008\/api\/v1\/webhooks\/whk_/);
      expect(links).toEqual([expect.objectContaining({ link_id: issued.link_id, state: 'issued' })]);
    },
    CLI_PROCESS_TIMEOUT_MS,
  );
});
