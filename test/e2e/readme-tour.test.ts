import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * The README's "Try it locally" tour, its shell blocks run exactly as written against a twin on ports and a data
 * directory of its own, given to the blocks as PORT and DATA_DIR the way a reader who started `npm start` with them
 * would; `npm start` is this test's twin. A newcomer's first ten minutes must not meet a command that fails, whatever
 * PORT and DATA_DIR they chose.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

function tourScript(): string {
  const readme = readFileSync(new URL('README.md', `file://${ROOT}`), 'utf8');
  const section = readme.slice(readme.indexOf('## Try it locally'), readme.indexOf('\n## ', readme.indexOf('## Try it locally') + 1));
  const blocks = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return blocks
    .join('\n')
    .split('\n')
    .filter((line) => line.trim() !== 'npm start')
    .join('\n');
}

describe("the README's tour", () => {
  it('runs as written: a dialog handed off, a call accepted, an execution approved and streamed, a cost report, its page and a forecast', async () => {
    const script = tourScript();
    expect(script).toContain('collect --task');
    // A fixed address would reach whatever answers on 3000, not the twin the reader started.
    expect(script).not.toContain(':3000');
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
