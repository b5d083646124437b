import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * `secrets set` typed at a terminal, as an operator does: util-linux `script` gives the CLI a pseudo-terminal, so
 * its stdin is a TTY; the value is typed after the prompt appears and must not be echoed back.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const SECRET = 'p"ss\\w0rd/x-typed';
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

describe('secrets set at a terminal', () => {
  it('asks for the value at a prompt that does not echo it, and stores it', async () => {
    const terminal = spawn('script', ['-qec', 'npm run --silent admin -- secrets set TYPED_KEY --project prompt', '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: twin.dataDir, PORT: new URL(twin.url).port },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let shown = '';
    const prompted = new Promise<void>((resolve) => {
      terminal.stdout.on('data', (chunk: Buffer) => {
        shown += chunk.toString('utf8');
        if (shown.includes('(not shown): ')) resolve();
      });
    });
    const ended = new Promise<number | null>((resolve) => terminal.once('exit', resolve));

    await prompted;
    terminal.stdin.write(`${SECRET}\r`);
    expect(await ended).toBe(0);

    expect(shown).toContain('Value of secret TYPED_KEY for project prompt (not shown): ');
    expect(shown).not.toContain(SECRET);
    expect(shown).toMatch(/"name": "TYPED_KEY",\s+"version": 1/);
    const listed = await twin.admin('secrets', 'list', '--project', 'prompt');
    expect(listed.secrets).toEqual([expect.objectContaining({ name: 'TYPED_KEY', version: 1 })]);
  }, 180_000);
});
