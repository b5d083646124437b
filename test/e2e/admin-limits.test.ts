import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DEFINITION_BYTES } from '#shared/limits.ts';
import { createKey, publishedClient } from '../support/published.ts';
import { refusedAdmin as refused, startTestTwin, type TestTwin } from '../support/local-twin.ts';

/** Operator input that would otherwise reach DynamoDB unbounded: definition size, names used as keys, ids. */
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

async function activePublication(project: string) {
  const { Item } = await twin.dynamo.send(
    new GetCommand({ TableName: twin.twin.tables.publications, Key: { pk: `project#${project}`, sk: 'active' } }),
  );
  return Item;
}

function workflowDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'wf-limits-'));
  for (const [name, document] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(document, null, 2));
  return dir;
}

/** A valid definition of about `bytes` bytes: a chain of scripted llm nodes with long replies. */
function definitionOfSize(id: string, bytes: number) {
  const nodes: Record<string, unknown> = {};
  const count = Math.ceil(bytes / 90_000);
  const reply = 'x'.repeat(Math.floor(bytes / count) - 100);
  for (let i = 0; i < count; i += 1) {
    nodes[`n${i}`] = { type: 'llm', provider: 'scripted', reply, next: i + 1 < count ? `n${i + 1}` : 'done' };
  }
  nodes.done = { type: 'end', output: 'ok' };
  return { id, name: id, start: 'n0', nodes };
}

describe('workflow definition size at publish', () => {
  it(`refuses a definition over ${MAX_DEFINITION_BYTES / 1024} KB with exit 1, naming the file and the limit, and publishes nothing`, async () => {
    const dir = workflowDir({ 'big.json': definitionOfSize('big', 300_000), 'small.json': definitionOfSize('small', 1000) });

    const answer = await refused('publish', dir, '--project', 'size-test');

    expect(answer.exitCode).toBe(1);
    expect(answer.error).toMatch(/^Invalid workflow definition in big\.json: big\.json: the definition is [\d,]+ bytes as stored/);
    expect(answer.error).toContain('the limit is 256 KB (262,144 bytes)');
    expect(await activePublication('size-test')).toBeUndefined();
  });

  it('publishes a definition just under the limit and serves it', async () => {
    const dir = workflowDir({ 'large.json': definitionOfSize('large', 250_000) });

    const published = await twin.admin('publish', dir, '--project', 'size-ok');

    expect(published.workflows).toEqual(['large']);
    expect(await activePublication('size-ok')).toMatchObject({ publication_id: published.publication_id });
    const client = publishedClient(twin, (await createKey(twin, 'full', { project: 'size-ok' })).key);
    const run = await client.execute('large', { user_id: 'u' });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'completed', output: 'ok' });
  });
});

describe('definitions naming prototype properties', () => {
  it('publishes memory names and output keys such as constructor, stores the definition as JSON text, and runs it', async () => {
    const definition = {
      id: 'proto-names',
      name: 'Prototype names',
      start: 'constructor',
      nodes: {
        constructor: { type: 'memory', set: { constructor: 'c', toString: 't', hasOwnProperty: 'h' }, next: 'toString' },
        toString: { type: 'end', output: { constructor: { name: 'String' }, valueOf: '{{memory.constructor}}' } },
      },
    };
    const dir = workflowDir({ 'proto.json': definition });

    const published = await twin.admin('publish', dir, '--project', 'proto');

    const { Items } = await twin.dynamo.send(
      new QueryCommand({
        TableName: twin.twin.tables.publications,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `publication#${published.publication_id}` },
      }),
    );
    expect(JSON.parse(Items![0]!.definition_json)).toEqual({ ...definition, description: '', tools: {} });
    const client = publishedClient(twin, (await createKey(twin, 'full', { project: 'proto' })).key);
    const run = await client.execute('proto-names', { user_id: 'u' });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'completed', output: { constructor: { name: 'String' }, valueOf: 'c' } });
  });

  it('refuses a node id, memory name or output key __proto__ (JSON.parse keeps it; zod would drop it silently)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wf-proto-'));
    writeFileSync(
      join(dir, 'nodes.json'),
      '{"id":"p1","name":"P","start":"done","nodes":{"__proto__":{"type":"end","output":"x"},"done":{"type":"end","output":"y"}}}',
    );
    expect(await refused('publish', dir, '--project', 'proto-refused')).toEqual({
      exitCode: 1,
      error: 'Invalid workflow definition in nodes.json: nodes.json.nodes.__proto__: is a reserved name',
    });
    writeFileSync(
      join(dir, 'nodes.json'),
      '{"id":"p2","name":"P","start":"m","nodes":{"m":{"type":"memory","set":{"__proto__":"x"},"next":"done"},"done":{"type":"end","output":{"__proto__":1}}}}',
    );
    const answer = await refused('publish', dir, '--project', 'proto-refused');
    expect(answer.exitCode).toBe(1);
    expect(answer.error).toContain('nodes.json.nodes.m.set.__proto__: is a reserved name');
    writeFileSync(
      join(dir, 'nodes.json'),
      '{"id":"p3","name":"P","start":"done","nodes":{"done":{"type":"end","output":{"a":[{"__proto__":1}]}}}}',
    );
    expect((await refused('publish', dir, '--project', 'proto-refused')).error).toContain(
      'nodes.json.nodes.done.output.a.0.__proto__: is a reserved name',
    );
    expect(await activePublication('proto-refused')).toBeUndefined();
  });

  it('refuses a memory name over 256 bytes of UTF-8 naming it', async () => {
    const name = 'я'.repeat(129);
    const dir = workflowDir({
      'long.json': {
        id: 'long',
        name: 'L',
        start: 'm',
        nodes: { m: { type: 'memory', set: { [name]: 'x' }, next: 'done' }, done: { type: 'end', output: 'y' } },
      },
    });
    const answer = await refused('publish', dir, '--project', 'proto-refused');
    expect(answer.exitCode).toBe(1);
    expect(answer.error).toContain(`long.json.nodes.m.set.${name}: key is 258 bytes of UTF-8; at most 256 bytes`);
  });
});

describe('CLI arguments that become keys', () => {
  it('refuses a --project that cannot be a project id (exit 2) and writes nothing', async () => {
    const long = 'p'.repeat(3000);
    expect(await refused('keys', 'create', '--name', 'n', '--preset', 'read', '--project', long)).toEqual({
      exitCode: 2,
      error: '--project must be 1-64 letters, digits, ".", "_" or "-"',
    });
    expect((await refused('publish', 'test/fixtures/workflows', '--project', 'a#b')).exitCode).toBe(2);
    expect((await twin.admin('keys', 'list')).keys.some((key: { project_id: string }) => key.project_id === long)).toBe(false);
  });

  it('refuses a key --name longer than a workflow name may be, or holding control characters (exit 2), and writes nothing', async () => {
    const keysBefore = (await twin.admin('keys', 'list')).keys;
    expect(await refused('keys', 'create', '--name', 'n'.repeat(10_240), '--preset', 'read')).toEqual({
      exitCode: 2,
      error: '--name is 10,240 characters; a key name is at most 200, as a workflow name',
    });
    for (const name of ['two\nlines', 'red\u001b[31m', 'nul\u0000', 'del\u007f', 'csi\u009b2J']) {
      expect(await refused('keys', 'create', '--name', name, '--preset', 'read')).toEqual({
        exitCode: 2,
        error: '--name must not contain control characters (newline, tab, ESC, ...): keys list shows it as written',
      });
    }
    expect((await twin.admin('keys', 'list')).keys).toEqual(keysBefore);
  });

  it('takes a key --name of exactly the workflow name limit, with any printable characters', async () => {
    const name = `Ключ ${'k'.repeat(195)}`;
    expect(name).toHaveLength(200);
    expect((await twin.admin('keys', 'create', '--name', name, '--preset', 'read')).name).toBe(name);
  });

  it('refuses link and key ids no id can be (exit 2)', async () => {
    const answer = await refused('links', 'bind', 'l'.repeat(3000));
    expect(answer.exitCode).toBe(2);
    expect(answer.error).toContain('is not a link_id');
    expect((await refused('keys', 'revoke', 'key#1')).exitCode).toBe(2);
  });

  it('treats prototype names as unknown commands and presets', async () => {
    for (const name of ['constructor', 'toString', 'hasOwnProperty', '__proto__']) {
      expect(await refused(name)).toEqual({ exitCode: 2, error: `unknown command ${name}` });
      expect(await refused('keys', 'create', '--name', 'n', '--preset', name)).toEqual({
        exitCode: 2,
        error: `unknown preset ${name}; use read, execute or full`,
      });
    }
  });
});
