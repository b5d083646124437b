import { describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';

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
