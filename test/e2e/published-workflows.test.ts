import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, publishFixtures, typedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});

/** Each test works in a project of its own, so the tests hold in any order. Calls go through lib/client, the typed client callers copy. */
async function projectClient(project: string) {
  return typedClient(twin, (await createKey(twin, 'read', { project })).key);
}
const workflow = (id: string) => ({ params: { path: { workflow_id: id } } });
afterAll(() => twin?.close());

describe('workflows of the active publication', () => {
  it('answers 400 with detail while the project has no active publication', async () => {
    const client = await projectClient('empty');
    const { data, error, response } = await client.GET('/workflows');
    expect(response.status).toBe(400);
    expect(data).toBeUndefined();
    expect(error).toEqual({ detail: 'The project has no active publication' });
    expect((await client.GET('/workflows/{workflow_id}', workflow('echo'))).response.status).toBe(400);
  });

  it('lists the active publication and shows one workflow with ISO timestamps', async () => {
    const client = await projectClient('listed');
    const published = await publishFixtures(twin, 'listed');
    expect(published.workflows).toEqual(['echo', 'gate', 'memory', 'router', 'support-bot']);
    const list = await client.GET('/workflows');
    expect(list.response.status).toBe(200);
    expect(list.data?.publication_id).toBe(published.publication_id);
    expect(list.data?.project_id).toBe('listed');
    expect(list.data?.workflows).toContainEqual({ id: 'support-bot', name: 'Support bot', description: 'Answers questions' });
    expect(list.data?.workflows).toHaveLength(5);

    const detail = await client.GET('/workflows/{workflow_id}', workflow('support-bot'));
    expect(detail.response.status).toBe(200);
    expect(detail.data).toEqual({
      id: 'support-bot',
      name: 'Support bot',
      description: 'Answers questions',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: detail.data?.created_at,
    });
  });

  it('answers 404 with detail for a workflow that is not in the active publication', async () => {
    const client = await projectClient('missing');
    await publishFixtures(twin, 'missing');
    const { error, response } = await client.GET('/workflows/{workflow_id}', workflow('nope'));
    expect(response.status).toBe(404);
    expect(error?.detail).toContain('nope');
  });

  it('keeps created_at across publications and reaches only the newest one', async () => {
    const client = await projectClient('republished');
    await publishFixtures(twin, 'republished');
    const before = (await client.GET('/workflows/{workflow_id}', workflow('echo'))).data!;
    const republished = await publishFixtures(twin, 'republished');
    const after = (await client.GET('/workflows/{workflow_id}', workflow('echo'))).data!;
    expect(after.created_at).toBe(before.created_at);
    expect(after.updated_at).toBe(before.updated_at);
    expect((await client.GET('/workflows')).data?.publication_id).toBe(republished.publication_id);
  });

  it('refuses an invalid definition at publish time, naming the file, node and field', async () => {
    const client = await projectClient('refused');
    await publishFixtures(twin, 'refused');
    const dir = mkdtempSync(join(tmpdir(), 'wf-'));
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({
        id: 'bad',
        name: 'Bad',
        start: 'a',
        nodes: {
          a: { type: 'llm', provider: 'scripted', next: 'missing' },
          b: { type: 'condition', cases: [{ if: 'input.x = ', next: 'a' }], else: 'a' },
        },
      }),
    );
    const { runCli } = await import('#lib/admin/cli.ts');
    const result = await runCli(['publish', dir, '--project', 'refused', '--json']);
    expect(result.exitCode).not.toBe(0);
    const error = JSON.parse(result.stdout).error as string;
    expect(error).toContain('bad.json.nodes.a.next: unknown node "missing"');
    expect(error).toContain('bad.json.nodes.a.reply: required for provider scripted');
    expect(error).toContain('bad.json.nodes.b.cases.0.if: not a valid JSONata expression');

    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({ id: 'bad', name: 'Bad', start: 'c', nodes: { c: { type: 'wait', seconds: 'five', next: 'c' } } }),
    );
    const typed = JSON.parse((await runCli(['publish', dir, '--project', 'refused', '--json'])).stdout).error as string;
    expect(typed).toContain('bad.json.nodes.c.seconds: Invalid input: expected number');
    expect((await client.GET('/workflows/{workflow_id}', workflow('bad'))).response.status).toBe(404);
  });

  it('unpublishes: the API answers 400 again', async () => {
    const client = await projectClient('unpublished');
    await publishFixtures(twin, 'unpublished');
    expect((await client.GET('/workflows')).response.status).toBe(200);
    const result = await twin.admin('unpublish', '--project', 'unpublished');
    expect(result.active_publication_id).toBeNull();
    expect((await client.GET('/workflows')).response.status).toBe(400);
  });
});
