import { GetCommand, QueryCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { boundedCache } from '#shared/bounded-cache.ts';
import { CACHED_DEFINITION_BYTES, CACHED_WORKFLOWS } from '#shared/limits.ts';
import { createPublicationsRepository } from '#workflows/publications-repository.ts';

describe('boundedCache', () => {
  it('pushes out the least recently used entry past maxEntries, and says so', () => {
    const evicted: string[] = [];
    const cache = boundedCache<string, number>({ maxEntries: 2, evicted: (key) => evicted.push(key) });
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([1, undefined, 3]);
    expect(evicted).toEqual(['b']);
    expect(cache.size).toBe(2);
  });

  it('keeps the entries within maxWeight together, and never a value heavier than that alone', () => {
    const cache = boundedCache<string, string>({ maxEntries: 100, maxWeight: 10, weigh: (value) => value.length });
    cache.set('a', 'xxxx');
    cache.set('b', 'xxxx');
    cache.set('c', 'xxxx');
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 'xxxx', 'xxxx']);
    cache.set('huge', 'x'.repeat(11));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.size).toBe(2);
  });
});

/** A document client answering from a table of workflow items, counting the reads it was sent. */
function fakeTable(items: (publicationId: string) => Record<string, unknown>[]) {
  const reads = { get: 0, query: 0 };
  const client = Object.assign(Object.create(DynamoDBDocumentClient.prototype) as DynamoDBDocumentClient, {
    send: async (command: unknown) => {
      if (command instanceof GetCommand) {
        reads.get += 1;
        const { pk, sk } = command.input.Key as { pk: string; sk: string };
        return { Item: workflowItem(pk.replace('publication#', ''), sk.replace('workflow#', ''), '{}') };
      }
      if (command instanceof QueryCommand) {
        reads.query += 1;
        const pk = command.input.ExpressionAttributeValues![':pk'] as string;
        return { Items: items(pk.replace('publication#', '')) };
      }
      throw new Error('unexpected command');
    },
  });
  return { client, reads };
}

const workflowItem = (publicationId: string, workflowId: string, definitionJson: string) => ({
  pk: `publication#${publicationId}`,
  sk: `workflow#${workflowId}`,
  publication_id: publicationId,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  definition_json: definitionJson,
});

describe('the publications repository: what a warm function instance keeps', () => {
  it('keeps at most CACHED_WORKFLOWS workflows: the least recently read is read again', async () => {
    const { client, reads } = fakeTable(() => []);
    const repository = createPublicationsRepository(client, 'publications');
    await repository.getWorkflow('p1', 'first');
    await repository.getWorkflow('p1', 'first');
    expect(reads.get).toBe(1);
    for (let i = 0; i < CACHED_WORKFLOWS; i++) await repository.getWorkflow('p2', `w${i}`);
    await repository.getWorkflow('p1', 'first');
    expect(reads.get).toBe(CACHED_WORKFLOWS + 2);
  });

  it('keeps a listing only while its stored definitions fit in CACHED_DEFINITION_BYTES', async () => {
    const large = JSON.stringify({ text: 'x'.repeat(256 * 1024) });
    const count = Math.ceil(CACHED_DEFINITION_BYTES / large.length) + 1;
    const { client, reads } = fakeTable((publicationId) =>
      publicationId === 'small'
        ? [workflowItem('small', 'w', '{}')]
        : Array.from({ length: count }, (_, i) => workflowItem(publicationId, `w${i}`, large)),
    );
    const repository = createPublicationsRepository(client, 'publications');
    await repository.listWorkflows('small');
    await repository.listWorkflows('small');
    expect(reads.query).toBe(1);
    await repository.listWorkflows('large');
    await repository.listWorkflows('large');
    expect(reads.query).toBe(3);
    expect((await repository.listWorkflows('small')).length).toBe(1);
    expect(reads.query).toBe(3);
  });
});
