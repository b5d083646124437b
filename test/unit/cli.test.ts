import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runCli, withTerminalStatus } from '#lib/admin/cli.ts';

/** With --json, stdout is exactly one JSON object, also when the CLI answers with its usage text. */
function oneJsonObject(stdout: string): Record<string, unknown> {
  expect(stdout.endsWith('\n')).toBe(true);
  expect(stdout.trimEnd().split('\n')).toHaveLength(1);
  const parsed = JSON.parse(stdout) as unknown;
  expect(parsed).toBeTypeOf('object');
  return parsed as Record<string, unknown>;
}

describe('admin --json without a command', () => {
  it('answers --help --json with the usage text inside one JSON object, exit 0', async () => {
    const result = await runCli(['--help', '--json']);
    expect(result.exitCode).toBe(0);
    const answer = oneJsonObject(result.stdout);
    expect(Object.keys(answer)).toEqual(['usage']);
    expect(answer.usage).toContain('cost report [--from YYYY-MM-DD]');
    expect(result.stderr).toBe('');
  });

  it('answers --json alone with one error object, exit 2, the usage text on stderr', async () => {
    const result = await runCli(['--json']);
    expect(result.exitCode).toBe(2);
    expect(oneJsonObject(result.stdout)).toEqual({ error: 'no command given; see --help for the commands' });
    expect(result.stderr).toContain('usage: npm run --silent admin -- <command>');
  });

  it('answers one error object when --json comes after --, where it is no flag', async () => {
    for (const argv of [
      ['--', '--json'],
      ['--', '--help', '--json'],
    ]) {
      const result = await runCli(argv);
      expect(result.exitCode).toBe(2);
      expect(oneJsonObject(result.stdout)).toEqual({ error: `unknown command ${argv[1]}` });
    }
  });

  it('keeps the usage text on stdout for a person who asked for --help', async () => {
    const result = await runCli(['--help']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^usage: npm run --silent admin -- <command>/);
  });
});

/**
 * `--stack` without any region the SDK can find: the CLI says how to give one before it sends anything (no region,
 * no endpoint, so nothing leaves the machine).
 */
describe('admin --stack without a region', () => {
  beforeEach(() => {
    vi.stubEnv('AWS_REGION', undefined);
    vi.stubEnv('AWS_DEFAULT_REGION', undefined);
    vi.stubEnv('AWS_PROFILE', undefined);
    vi.stubEnv('AWS_CONFIG_FILE', join(tmpdir(), 'no-such-aws-config'));
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', join(tmpdir(), 'no-such-aws-credentials'));
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('is a usage mistake naming --region and AWS_REGION', async () => {
    for (const argv of [
      ['links', 'list'],
      ['cost', 'report'],
    ]) {
      const result = await runCli([...argv, '--stack', 'Some-Stack', '--json']);
      expect(result.exitCode, result.stdout).toBe(2);
      const { error } = JSON.parse(result.stdout) as { error: string };
      expect(error).toBe('--stack Some-Stack needs its region: give --region R, or set AWS_REGION (or a region in your AWS profile)');
    }
  });
});

/** The status line `admin collect` keeps on stderr while it waits: rewritten in place at a terminal, absent in a pipe. */
function stderrLike(isTTY: boolean, columns = 40) {
  const written: string[] = [];
  const stream = { isTTY, columns, write: (text: string) => written.push(text) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, written };
}

describe('a long wait at the terminal', () => {
  it('rewrites one line in place, no wider than the terminal, and clears it before the answer', async () => {
    const { stream, written } = stderrLike(true, 20);
    const answer = await withTerminalStatus(stream, async (status) => {
      status!('collect: run manual-1 still running after 1 s: no batch finished yet');
      status!('collect: run manual-1 still running after 2 s: 3 handed off');
      return 'done';
    });
    expect(answer).toBe('done');
    expect(written).toEqual(['\r\x1b[Kcollect: run manual', '\r\x1b[Kcollect: run manual', '\r\x1b[K']);
  });

  it('clears the line when the wait fails, so the error starts clean', async () => {
    const { stream, written } = stderrLike(true);
    const failed = withTerminalStatus(stream, async (status) => {
      status!('still running');
      throw new Error('ended unfinished');
    });
    await expect(failed).rejects.toThrow('ended unfinished');
    expect(written).toEqual(['\r\x1b[Kstill running', '\r\x1b[K']);
  });

  it('gives a pipe no status at all, since scripts and tests read stderr', async () => {
    const { stream, written } = stderrLike(false);
    await withTerminalStatus(stream, async (status) => expect(status).toBeUndefined());
    expect(written).toEqual([]);
  });
});
