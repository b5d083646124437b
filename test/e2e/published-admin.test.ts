import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedAdmin as refused, startTestTwin, type TestTwin } from '../support/local-twin.ts';

let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

describe('admin CLI refusals for keys and publications', () => {
  it('refuses malformed keys create calls as usage mistakes (exit 2)', async () => {
    // Other tests of this file may have created keys: what counts is that none of these refusals adds one.
    const keysBefore = (await twin.admin('keys', 'list')).keys;
    expect(await refused('keys', 'create', '--preset', 'full')).toEqual({ exitCode: 2, error: 'keys create needs --name' });
    expect(await refused('keys', 'create', '--name', 'n')).toEqual({ exitCode: 2, error: 'keys create needs --preset or --scopes' });
    expect(await refused('keys', 'create', '--name', 'n', '--preset', 'full', '--scopes', '*')).toEqual({
      exitCode: 2,
      error: 'give --preset or --scopes, not both',
    });
    expect(await refused('keys', 'create', '--name', 'n', '--preset', 'admin')).toEqual({
      exitCode: 2,
      error: 'unknown preset admin; use read, execute or full',
    });
    expect(await refused('keys', 'create', '--name', 'n', '--scopes', 'workflows.read,workflows.delete')).toEqual({
      exitCode: 2,
      error: 'unknown scope workflows.delete',
    });
    for (const expires of ['2027-01-31', '2027-01-31T00:00:00', 'soon']) {
      const answer = await refused('keys', 'create', '--name', 'n', '--preset', 'read', '--expires', expires);
      expect(answer.exitCode).toBe(2);
      expect(answer.error).toContain('--expires must be an ISO 8601 time with an offset');
    }
    expect(await refused('keys', 'rotate')).toEqual({ exitCode: 2, error: 'keys rotate needs a <key_id>' });
    expect(await refused('keys', 'frobnicate')).toEqual({ exitCode: 2, error: 'unknown keys command frobnicate' });
    expect((await twin.admin('keys', 'list')).keys).toEqual(keysBefore);
  });

  it('refuses rotating an unknown or revoked key (exit 1)', async () => {
    expect(await refused('keys', 'rotate', 'key_missing')).toEqual({ exitCode: 1, error: 'API key key_missing not found' });
    expect(await refused('keys', 'revoke', 'key_missing')).toEqual({ exitCode: 1, error: 'API key key_missing not found' });
    const created = await twin.admin(
      'keys',
      'create',
      '--name',
      'n',
      '--scopes',
      'workflows.read,executions.read',
      '--expires',
      '2030-01-01T00:00:00+02:00',
    );
    expect(created.expires_at).toBe('2029-12-31T22:00:00.000Z');
    expect(created.scopes).toEqual(['workflows.read', 'executions.read']);
    expect(await twin.admin('keys', 'revoke', created.key_id)).toEqual({ key_id: created.key_id, state: 'revoked' });
    expect(await refused('keys', 'rotate', created.key_id)).toEqual({ exitCode: 1, error: `API key ${created.key_id} is revoked` });
  });

  it('refuses publishing nothing, unreadable paths, invalid JSON and duplicate ids', async () => {
    expect(await refused('publish')).toEqual({ exitCode: 2, error: 'publish needs a <file-or-directory>' });
    expect(await refused('publish', '/no/such/dir')).toEqual({ exitCode: 2, error: 'cannot read /no/such/dir' });
    const dir = mkdtempSync(join(tmpdir(), 'wf-'));
    expect((await refused('publish', dir)).error).toBe('Invalid publication: workflows: a publication needs at least one workflow');
    writeFileSync(join(dir, 'broken.json'), '{"id":');
    expect((await refused('publish', dir)).error).toMatch(/^broken\.json is not valid JSON/);
    const definition = { id: 'same', name: 'S', start: 'done', nodes: { done: { type: 'end', output: 'x' } } };
    writeFileSync(join(dir, 'broken.json'), JSON.stringify(definition));
    writeFileSync(join(dir, 'copy.json'), JSON.stringify(definition));
    expect(await refused('publish', dir)).toEqual({ exitCode: 1, error: 'Invalid publication: same.id: two workflows share this id' });
    expect(await twin.admin('unpublish', '--project', 'nothing-here')).toEqual({
      project_id: 'nothing-here',
      unpublished_publication_id: null,
      active_publication_id: null,
    });
  });
});
