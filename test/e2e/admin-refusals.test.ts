import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { callEvent } from '../support/events.ts';
import { postJson } from '../support/http.ts';
import { refusedAdmin as refused, startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * Admin commands whose arguments could only ever give a useless result (a report on other days than asked, a key
 * expired at birth, a link that refuses the recordings it was meant to accept): each is a usage mistake (exit 2)
 * that says why, and leaves nothing behind.
 */
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

describe('cost report dates', () => {
  it('refuses a day the month does not have, naming the flag, instead of rolling it into the next month', async () => {
    expect(await refused('cost', 'report', '--from', '2026-02-30')).toEqual({
      exitCode: 2,
      error: '--from must be a date YYYY-MM-DD; 2026-02-30 does not exist',
    });
    expect(await refused('cost', 'report', '--from', '2026-04-01', '--to', '2026-04-31')).toEqual({
      exitCode: 2,
      error: '--to must be a date YYYY-MM-DD; 2026-04-31 does not exist',
    });
    expect(await refused('cost', 'report', '--from', '2026-02-29', '--to', '2026-03-01')).toEqual({
      exitCode: 2,
      error: '--from must be a date YYYY-MM-DD; 2026-02-29 does not exist',
    });
    expect(await refused('cost', 'report', '--to', '2026-02-32')).toEqual({ exitCode: 2, error: '--to must be a date YYYY-MM-DD' });
  });

  it('refuses a period longer than the usage is kept, naming the limit, at once instead of a step per day', async () => {
    const limit = 'a period is at most 400 days, as long as usage is kept';
    expect(await refused('cost', 'report', '--from', '0001-01-01', '--to', '9999-12-31')).toEqual({
      exitCode: 2,
      error: `--from 0001-01-01 --to 9999-12-31 is 3,652,059 days; ${limit}`,
    });
    expect(await refused('cost', 'report', '--from', '2025-01-01', '--to', '2026-02-05')).toEqual({
      exitCode: 2,
      error: `--from 2025-01-01 --to 2026-02-05 is 401 days; ${limit}`,
    });
    expect(await refused('cost', 'estimate', '--from', '0001-01-01', '--to', '9999-12-31')).toEqual({
      exitCode: 2,
      error: `--from 0001-01-01 --to 9999-12-31 is 3,652,059 days; ${limit}`,
    });
    // Without --from, the report starts on the first day of --to's month and the estimate 29 days before --to.
    expect((await runCli(['cost', 'report', '--to', '9999-12-31', '--json'])).exitCode).toBe(0);
    expect((await runCli(['cost', 'estimate', '--to', '9999-12-31', '--json'])).exitCode).toBe(0);
  });

  it('reports a period of exactly the limit, every day of it', async () => {
    const result = await runCli(['cost', 'report', '--from', '2025-01-01', '--to', '2026-02-04', '--json']);
    expect(result.exitCode, result.stdout).toBe(0);
    expect(JSON.parse(result.stdout).days).toHaveLength(400);
  });

  it('takes every day that exists, a leap day included', async () => {
    const result = await runCli(['cost', 'report', '--from', '2024-02-29', '--to', '2024-12-31', '--json']);
    expect(result.exitCode, result.stdout).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ from: '2024-02-29', to: '2024-12-31' });
  });
});

describe('cost report --html FILE', () => {
  const dir = mkdtempSync(join(tmpdir(), 'html-out-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes into a directory that exists, and makes none: a missing one is refused, naming it', async () => {
    const missing = join(dir, 'typo', 'deeper');
    expect(await refused('cost', 'report', '--html', join(missing, 'cost.html'))).toEqual({
      exitCode: 2,
      error: `--html: the directory ${missing} does not exist; create it first, or name a file in a directory that exists`,
    });
    expect(existsSync(join(dir, 'typo'))).toBe(false);
  });

  it('answers a directory that cannot exist at once (one JSON error with --json; a message and exit 2 without)', async () => {
    expect(await refused('cost', 'report', '--html', '/proc/nope/x.html')).toEqual({
      exitCode: 2,
      error: '--html: the directory /proc/nope does not exist; create it first, or name a file in a directory that exists',
    });
    const plain = await runCli(['cost', 'report', '--html', '/proc/nope/x.html']);
    expect(plain.exitCode).toBe(2);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(/^error: --html: the directory \/proc\/nope does not exist;/);
  });

  it('refuses a parent that is a file, and a FILE that is a directory', async () => {
    const file = join(dir, 'plain.txt');
    writeFileSync(file, 'x');
    expect(await refused('cost', 'report', '--html', join(file, 'cost.html'))).toEqual({
      exitCode: 2,
      error: `--html: ${file} is not a directory`,
    });
    expect(await refused('cost', 'report', '--html', dir)).toEqual({
      exitCode: 2,
      error: `--html: ${dir} is a directory; name a file in it, e.g. ${join(dir, 'cost.html')}`,
    });
  });

  it('refuses a FILE ending in a slash, which would write a file named as the directory', async () => {
    const named = join(dir, 'reports');
    expect(await refused('cost', 'report', '--html', `${named}/`)).toEqual({
      exitCode: 2,
      error: `--html names a file, and ${named}/ ends with a slash; name one in it, e.g. ${named}/cost.html`,
    });
    expect(existsSync(named)).toBe(false);
  });

  it("answers the disk's refusal as the product's (exit 1), not as a usage mistake", async () => {
    // /dev/full takes nothing: every write answers ENOSPC, as a full disk does.
    const full = await runCli(['cost', 'report', '--html', '/dev/full']);
    expect(full.exitCode, full.stderr).toBe(1);
    expect(full.stderr).toBe('error: --html: cannot write /dev/full (ENOSPC)\n');
  });

  it("makes the CLI's own .local directory (where the data directory lives by default), and nothing under it", async () => {
    const workdir = mkdtempSync(join(dir, 'cwd-'));
    const before = process.cwd();
    process.chdir(workdir);
    try {
      expect(await refused('cost', 'report', '--html', '.local/reports/cost.html')).toEqual({
        exitCode: 2,
        error: `--html: the directory ${join(workdir, '.local', 'reports')} does not exist; create it first, or name a file in a directory that exists`,
      });
      expect(existsSync(join(workdir, '.local'))).toBe(false);
      expect((await twin.admin('cost', 'report', '--html', '.local/cost.html')).html).toBe(join(workdir, '.local', 'cost.html'));
      expect(readFileSync(join(workdir, '.local', 'cost.html'), 'utf8')).toMatch(/^<!doctype html>/);
    } finally {
      process.chdir(before);
    }
  });

  it('writes the page into an existing directory', async () => {
    const file = join(dir, 'cost.html');
    const written = await twin.admin('cost', 'report', '--html', file);
    expect(written.html).toBe(file);
    expect(readFileSync(file, 'utf8')).toMatch(/^<!doctype html>/);
  });
});

describe('keys create --expires', () => {
  it('refuses an expiry that is not in the future: the key would be dead on arrival', async () => {
    const keysBefore = (await twin.admin('keys', 'list')).keys;
    for (const expires of ['2020-01-01T00:00:00Z', new Date().toISOString()]) {
      const answer = await refused('keys', 'create', '--name', 'late', '--preset', 'read', '--expires', expires);
      expect(answer.exitCode).toBe(2);
      expect(answer.error).toMatch(
        /^--expires (\S+) is not in the future \(now is \S+Z\): the key would be expired as soon as it is created$/,
      );
      expect(answer.error.split(' ')[1]).toBe(expires);
    }
    expect((await twin.admin('keys', 'list')).keys).toEqual(keysBefore);
  });

  it('refuses a day the month does not have, and an empty value, as malformed', async () => {
    for (const expires of ['2030-02-30T00:00:00Z', '']) {
      expect(await refused('keys', 'create', '--name', 'n', '--preset', 'read', '--expires', expires)).toEqual({
        exitCode: 2,
        error: '--expires must be an ISO 8601 time with an offset, e.g. 2027-01-31T00:00:00Z',
      });
    }
  });

  it('still takes a future expiry', async () => {
    const created = await twin.admin('keys', 'create', '--name', 'n', '--preset', 'read', '--expires', '2099-01-01T00:00:00+01:00');
    expect(created.expires_at).toBe('2098-12-31T23:00:00.000Z');
  });
});

describe('links issue --allow-hosts', () => {
  const issue = (allowHosts: string) => refused('links', 'issue', '--type', 'calls', '--allow-hosts', allowHosts);
  const entryError = (entry: string, reason: string) => ({ exitCode: 2, error: `--allow-hosts entry ${JSON.stringify(entry)} ${reason}` });
  const SCHEME_OR_PATH =
    'has a scheme or path: give the host name alone (records.example.com); a recording link is matched on its host only';
  const PORT = 'has a port: give the host name alone; a recording link to any port of the host matches';
  const WILDCARD = 'has a "*" that is not a leading "*.": the only wildcard is *.example.com (any subdomain of example.com)';

  it('refuses entries no recording link can match, saying why, and issues no link', async () => {
    const linksBefore = (await twin.admin('links', 'list')).links;
    expect(await issue('*')).toEqual(
      entryError(
        '*',
        'matches no host: "*" is not a wildcard for every host; to accept recordings from any public host, leave --allow-hosts out',
      ),
    );
    for (const empty of ['', ' ', 'records.example.com,', 'a.example.com,,b.example.com']) {
      expect(await issue(empty)).toEqual({
        exitCode: 2,
        error: '--allow-hosts needs one or more host names, separated by commas, none empty',
      });
    }
    expect(await issue('https://records.example.com')).toEqual(entryError('https://records.example.com', SCHEME_OR_PATH));
    expect(await issue('records.example.com/calls')).toEqual(entryError('records.example.com/calls', SCHEME_OR_PATH));
    expect(await issue('records.example.com:443')).toEqual(entryError('records.example.com:443', PORT));
    expect(await issue('[2606:4700::1111]:443')).toEqual(entryError('[2606:4700::1111]:443', PORT));
    expect(await issue('2606:4700::1111')).toEqual(
      entryError('2606:4700::1111', 'is an IPv6 address without brackets: write it as a link does, [2606:4700::1111]'),
    );
    for (const entry of ['rec*.example.com', '*.*.example.com', 'records.*.com', '*example.com', 'example.*'])
      expect(await issue(entry)).toEqual(entryError(entry, WILDCARD));
    // Hosts the public-link rule refuses before any allow-list is read.
    expect(await issue('good.example.com, localhost')).toEqual(
      entryError('localhost', 'can match no recording link: host must be a public domain name'),
    );
    expect(await issue('*.internal')).toEqual(entryError('*.internal', 'can match no recording link: host must be a public domain name'));
    expect(await issue('10.0.0.1')).toEqual(entryError('10.0.0.1', 'can match no recording link: host must be a public address'));
    expect(await issue('*.1.2.3.4')).toEqual(entryError('*.1.2.3.4', 'can match no recording link: host is an ambiguous numeric address'));
    expect(await issue('user@records.example.com')).toEqual(
      entryError('user@records.example.com', 'can match no recording link: must not contain credentials'),
    );
    // A link's host is compared as the URL parser spells it.
    expect(await issue('Bücher.de')).toEqual(
      entryError('Bücher.de', "never equals a link's host, which is compared as the URL parser spells it: write xn--bcher-kva.de"),
    );
    expect(await issue('*.bücher.de')).toEqual(
      entryError('*.bücher.de', "never equals a link's host, which is compared as the URL parser spells it: write *.xn--bcher-kva.de"),
    );
    expect(await issue('[2606:4700:0:0:0:0:0:1111]')).toEqual(
      entryError(
        '[2606:4700:0:0:0:0:0:1111]',
        "never equals a link's host, which is compared as the URL parser spells it: write [2606:4700::1111]",
      ),
    );
    expect((await twin.admin('links', 'list')).links).toEqual(linksBefore);
  });

  it('issues a link whose entries each admit a recording on a host they name', async () => {
    const allowHosts = ' Records.Example.com , *.cdn.example.net,[2606:4700::1111],*.2.3.4,xn--bcher-kva.de';
    const issued = await twin.admin('links', 'issue', '--type', 'calls', '--allow-hosts', allowHosts);
    expect(issued.allow_hosts).toEqual(['records.example.com', '*.cdn.example.net', '[2606:4700::1111]', '*.2.3.4', 'xn--bcher-kva.de']);
    const { source_id: sourceId } = await twin.admin('links', 'bind', issued.link_id);
    expect(sourceId).toMatch(/^src_/);
    const events = `${twin.webhookUrl}/api/v1/webhooks/${issued.token}/events`;
    for (const url of [
      'https://records.example.com/1.mp3',
      'https://eu.cdn.example.net/1.mp3',
      'https://[2606:4700::1111]/1.mp3',
      'https://1.2.3.4/1.mp3',
      'https://bücher.de/1.mp3',
    ]) {
      const answer = await postJson(events, callEvent({ audio: { url, format: 'mp3' } }));
      expect(answer.status, `${url}: ${answer.text}`).toBe(201);
    }
    const outside = await postJson(events, callEvent({ audio: { url: 'https://elsewhere.example.org/1.mp3', format: 'mp3' } }));
    expect(outside.status).toBe(400);
    expect(outside.body.details).toEqual([{ field: 'audio.url', message: 'host is not in the allow-list of this source' }]);
  });
});
