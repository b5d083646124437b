import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, publishFixtures, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { holdResponsesToDocuments } from '../support/openapi.ts';

// Every answer this file receives must be one the OpenAPI documents describe.
beforeAll(holdResponsesToDocuments);

let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});

/** Each test works in a project of its own, so the tests hold in any order. */
async function projectClient(project: string) {
  return publishedClient(twin, (await createKey(twin, 'read', { project })).key);
}
afterAll(() => twin?.close());

describe('workflows of the active publication', () => {
  it('answers 400 with detail while the project has no active publication', async () => {
    const client = await projectClient('empty');
    const response = await client.listWorkflows();
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ detail: 'The project has no active publication' });
    expect((await client.getWorkflow('echo')).status).toBe(400);
  });

  it('lists the active publication and shows one workflow with ISO timestamps', async () => {
    const client = await projectClient('listed');
    const published = await publishFixtures(twin, 'listed');
    expect(published.workflows).toEqual(['echo', 'gate', 'memory', 'router', 'support-bot']);
    const list = await client.listWorkflows();
    expect(list.status).toBe(200);
    expect(list.body.publication_id).toBe(published.publication_id);
    expect(list.body.project_id).toBe('listed');
    expect(list.body.workflows).toContainEqual({ id: 'support-bot', name: 'Support bot', description: 'Answers questions' });
    expect(list.body.workflows).toHaveLength(5);

    const detail = await client.getWorkflow('support-bot');
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual({
      id: 'support-bot',
      name: 'Support bot',
      description: 'Answers questions',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: detail.body.created_at,
    });
  });

  it('answers 404 with detail for a workflow that is not in the active publication', async () => {
    const client = await projectClient('missing');
    await publishFixtures(twin, 'missing');
    const response = await client.getWorkflow('nope');
    expect(response.status).toBe(404);
    expect(response.body.detail).toContain('nope');
  });

  it('keeps created_at across publications and reaches only the newest one', async () => {
    const client = await projectClient('republished');
    await publishFixtures(twin, 'republished');
    const before = (await client.getWorkflow('echo')).body;
    const republished = await publishFixtures(twin, 'republished');
    const after = (await client.getWorkflow('echo')).body;
    expect(after.created_at).toBe(before.created_at);
    expect(after.updated_at).toBe(before.updated_at);
    expect((await client.listWorkflows()).body.publication_id).toBe(republished.publication_id);
  });

  it('refuses an invalid definition at publish time, naming the file, node and field', async () => {
    const client = await projectClient('refused');
    await publishFixtures(twin, 'refused');
    const dir = mkdtempSync(join(tmpdir(), 'wf-'));
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({
        id: 'bad', name: 'Bad', start: 'a',
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

    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ id: 'bad', name: 'Bad', start: 'c', nodes: { c: { type: 'wait', seconds: 'five', next: 'c' } } }));
    const typed = JSON.parse((await runCli(['publish', dir, '--project', 'refused', '--json'])).stdout).error as string;
    expect(typed).toContain('bad.json.nodes.c.seconds: Invalid input: expected number');
    expect((await client.getWorkflow('bad')).status).toBe(404);
  });

  it('unpublishes: the API answers 400 again', async () => {
    const client = await projectClient('unpublished');
    await publishFixtures(twin, 'unpublished');
    expect((await client.listWorkflows()).status).toBe(200);
    const result = await twin.admin('unpublish', '--project', 'unpublished');
    expect(result.active_publication_id).toBeNull();
    expect((await client.listWorkflows()).status).toBe(400);
  });
});
