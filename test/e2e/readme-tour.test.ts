import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * The README's "Try it locally" tour, its shell blocks run as written against a twin: only the address (the tour's
 * `127.0.0.1:3000`) becomes this twin's, and `npm start` is this test's twin. A newcomer's first ten minutes must
 * not meet a command that fails.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

function tourScript(address: string): string {
  const readme = readFileSync(new URL('README.md', `file://${ROOT}`), 'utf8');
  const section = readme.slice(readme.indexOf('## Try it locally'), readme.indexOf('\n## ', readme.indexOf('## Try it locally') + 1));
  const blocks = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return blocks
    .join('\n')
    .split('\n')
    .filter((line) => line.trim() !== 'npm start')
    .join('\n')
    .replaceAll('127.0.0.1:3000', address);
}

describe("the README's tour", () => {
  it('runs as written: a dialog handed off, a call accepted, an execution approved and streamed, a cost report, its page and a forecast', async () => {
    const script = tourScript(new URL(twin.url).host);
    expect(script).toContain('collect --task');
    const { stdout } = await run('bash', ['-e', '-o', 'pipefail', '-c', script], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: twin.dataDir, PORT: new URL(twin.url).port },
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(stdout).toContain('"state":"bound"');
    expect(stdout).toMatch(/"handed_off":1\b/);
    expect(stdout).toContain('"external_id":"chat-1"');
    expect(stdout).toContain('"status":"accepted","external_id":"call-1"');
    expect(stdout).toContain('"status":"interrupted"');
    expect(stdout).toMatch(/event: complete\ndata: \{[^\n]*"status":"completed"/);
    expect(stdout).toContain('"total_usd"');
    expect(stdout).toMatch(/"html":\s*"[^"]*cost\.html"/);
    expect(stdout).toMatch(/"monthly_usd":\s*\d/);
  }, 300_000);
});
