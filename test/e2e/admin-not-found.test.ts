import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { refusedAdmin as refused, startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * A well-formed id that names nothing is a refusal by the product (exit 1), whichever command names it and however
 * (an argument or a flag); exit 2 stays for a mistake in how the CLI was called.
 */
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

const NO_LINK = 'lnk_doesnotexist';
const NO_TASK = 'tsk_doesnotexist';

describe('an id that names nothing', () => {
  it('is refused with exit 1 by links bind, keys revoke and secrets delete', async () => {
    expect(await refused('links', 'bind', NO_LINK)).toMatchObject({ exitCode: 1 });
    expect(await refused('keys', 'revoke', 'key_doesnotexist')).toMatchObject({ exitCode: 1 });
    expect(await refused('secrets', 'delete', 'NOPE')).toEqual({ exitCode: 1, error: 'project default has no secret NOPE' });
  });

  it('is refused with exit 1 by tasks create --link, naming the link, and creates no task', async () => {
    expect(await refused('tasks', 'create', '--link', NO_LINK)).toEqual({ exitCode: 1, error: `link ${NO_LINK} not found` });
    expect(
      await refused('tasks', 'create', '--link', NO_LINK, '--once', '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-02T00:00:00Z'),
    ).toEqual({
      exitCode: 1,
      error: `link ${NO_LINK} not found`,
    });
    expect((await twin.admin('tasks', 'list')).tasks).toEqual([]);
  });

  it('is refused with exit 1 by cost report --link, rather than reported as a link that cost nothing', async () => {
    expect(await refused('cost', 'report', '--link', NO_LINK)).toEqual({ exitCode: 1, error: `link ${NO_LINK} not found` });
  });

  it('is refused with exit 1 by collect --task, naming the task', async () => {
    expect(await refused('collect', '--task', NO_TASK)).toEqual({ exitCode: 1, error: `task ${NO_TASK} not found` });
  });

  it('is refused with exit 1 by events --link and handoffs --link, naming the link', async () => {
    expect(await refused('events', '--link', NO_LINK)).toEqual({ exitCode: 1, error: `link ${NO_LINK} not found` });
    expect(await refused('handoffs', '--link', NO_LINK)).toEqual({ exitCode: 1, error: `link ${NO_LINK} not found` });
  });

  it('says so without --json on stderr, without the usage text a usage mistake gets', async () => {
    const result = await runCli(['events', '--link', NO_LINK]);
    expect(result).toEqual({ exitCode: 1, stdout: '', stderr: `error: link ${NO_LINK} not found\n` });
  });

  it('stays a usage mistake (exit 2) when the id is not shaped like one', async () => {
    expect(await refused('events', '--link', 'not an id')).toMatchObject({ exitCode: 2 });
    expect(await refused('collect', '--task', 'not an id')).toMatchObject({ exitCode: 2 });
  });
});
