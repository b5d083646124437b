import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedClient, startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';

/**
 * lib/client/example.ts run as its header says, against a twin with the fixture workflows published and a key: the
 * workflows listed, a blocking run completed, a stream aborted after two events and resumed with every later event
 * once to its `complete`, and an execution approved at its approval and completed.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);
let twin: TestTwin;
let key: string;
beforeAll(async () => {
  ({ twin, key } = await startPublishedTwin());
});
afterAll(() => twin?.close());

const idsOf = (text: string) => text.split(' ').map(Number);

describe('the typed client example', () => {
  it('lists, runs, streams and resumes, and approves, printing each outcome', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'lib/client/example.ts'], {
      cwd: ROOT,
      env: { ...process.env, PUBLISHED_API_URL: twin.url, PUBLISHED_API_KEY: key },
    });
    const lines = stdout.trimEnd().split('\n');

    expect(lines[0]).toMatch(/^workflows: .*\becho\b/);
    expect(lines[0]).toContain('support-bot');
    expect(lines[1]).toBe('execute echo: completed, output "Echo: hello"');

    const stopped = /^stream echo: events (.+), stopped at event (\d+) of execution (\S+)$/.exec(lines[2]!);
    const resumed = /^resumed: events (.+), complete completed, output "Echo: streamed"$/.exec(lines[3]!);
    expect(stopped, lines[2]).not.toBeNull();
    expect(resumed, lines[3]).not.toBeNull();
    expect(idsOf(stopped![1]!)).toEqual([1, 2]);
    expect(stopped![2]).toBe('2');
    const all = [...idsOf(stopped![1]!), ...idsOf(resumed![1]!)];
    expect(all).toEqual(Array.from({ length: all.length }, (_, index) => index + 1));
    expect((await publishedClient(twin, key).getExecution(stopped![3]!)).body).toMatchObject({
      status: 'completed',
      output: 'Echo: streamed',
    });

    expect(lines[4]).toMatch(/^execute support-bot: interrupted, approval \S+: Send You said: refund please\?$/);
    expect(lines[5]).toBe('approve: approved, running');
    expect(lines[6]).toMatch(/^execution \S+: completed$/);
    expect(lines).toHaveLength(7);
  }, 120_000);
});
