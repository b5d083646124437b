import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, paginateQuery } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamEventAppender } from '#executions/stream-event-log.ts';
import { createStreamEventsRepository } from '#executions/stream-events-repository.ts';
import { settledEvents } from '#executions/stream-events.ts';
import { emptyUsage } from '#executions/execution-usage.ts';
import { MAX_EXECUTION_RESULT_BYTES, STREAM_EVENT_ITEM_BODY_MAX_BYTES } from '#shared/limits.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localTableName, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';

/** The stream events repository against the embedded DynamoDB, which refuses items over 400 KB as DynamoDB does. */
describe('stream events table (embedded DynamoDB)', () => {
  let dataDir: string;
  let stores: LocalStores;
  let dynamo: DynamoDBDocumentClient;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'stream-events-'));
    stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
    dynamo = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: stores.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    );
  });
  afterAll(async () => {
    dynamo?.destroy();
    await stores?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const repository = () => createStreamEventsRepository(dynamo, localTableName('streamEvents'));
  const itemsOf = async (pk: string) => {
    const items: Record<string, any>[] = [];
    const pages = paginateQuery(
      { client: dynamo },
      { TableName: localTableName('streamEvents'), KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } },
    );
    for await (const page of pages) items.push(...page.Items!);
    return items;
  };

  it('keeps batches in id order past the first nine, and finds the batch holding an id', async () => {
    const run = randomUUID();
    const appender = streamEventAppender(repository(), run, { now: Date.now, projectId: 'p' });
    for (let batch = 0; batch < 12; batch++)
      await appender.append([
        { type: 'token', data: { content: `${batch}a` } },
        { type: 'token', data: { content: `${batch}b` } },
      ]);

    const { batches, more } = await repository().batchesAfter(run, 0);
    expect(more).toBe(false);
    expect(batches.map((batch) => batch.firstId)).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23]);
    expect((await repository().batchHolding(run, 12))!.firstId).toBe(11);
    expect((await repository().batchesAfter(run, 19)).batches.map((batch) => batch.events.map((event) => event.id))).toEqual([
      [21, 22],
      [23, 24],
    ]);
    expect(await repository().tail(run)).toEqual({ lastId: 24, final: false });
    expect(await repository().owner(run)).toBe('p');
    expect(
      await repository().putBatch(run, 23, [{ type: 'token', data: { content: 'again' } }], { final: false, expiresAtMs: Date.now() }),
    ).toBe(false);
  });

  it('stores a batch past 1 KB gzip-compressed, and a complete with the largest output in parts, read back whole', async () => {
    const run = randomUUID();
    const appender = streamEventAppender(repository(), run, { now: Date.now });
    const words = Array.from({ length: 400 }, (_, index) => ({ type: 'token' as const, data: { content: `word${index} ` } }));
    await appender.append(words);
    // Random text does not compress: the item limit, not gzip, decides.
    const output = randomBytes(MAX_EXECUTION_RESULT_BYTES * 0.6)
      .toString('base64')
      .slice(0, MAX_EXECUTION_RESULT_BYTES - 10);
    await appender.append(settledEvents({ execution_id: run, status: 'completed', output, error: null, pending_approval: null }));

    const items = await itemsOf(`run#${run}`);
    expect(items).toHaveLength(2);
    expect(items[0]).toMatchObject({ gzip: true, count: 400 });
    expect((items[0]!.body as Uint8Array).byteLength).toBeLessThan(JSON.stringify(words).length / 3);
    expect(items[1]).toMatchObject({ final: true, count: 1, parts: { pk: expect.stringMatching(`^parts#${run}#`) } });
    expect(items[1]!.body).toBeUndefined();
    const parts = await itemsOf(items[1]!.parts.pk as string);
    expect(parts).toHaveLength(items[1]!.parts.count as number);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect((part.body as Uint8Array).byteLength).toBeLessThanOrEqual(STREAM_EVENT_ITEM_BODY_MAX_BYTES);

    const { batches } = await repository().batchesAfter(run, 0);
    expect(batches[0]!.events.map((event) => event.data.content).join('')).toBe(words.map((word) => word.data.content).join(''));
    expect(batches[1]!.events).toEqual([
      { id: 401, type: 'complete', data: { output, execution_id: run, status: 'completed', usage: emptyUsage() } },
    ]);
    expect(await repository().tail(run)).toEqual({ lastId: 401, final: true });
  });

  it('is as strict as DynamoDB about item size: one body over 400 KB is refused, which is why parts exist', async () => {
    const tooLarge = dynamo.send(
      new PutCommand({
        TableName: localTableName('streamEvents'),
        Item: { pk: `run#${randomUUID()}`, sk: '000000000001', body: randomBytes(400 * 1024) },
      }),
    );
    await expect(tooLarge).rejects.toMatchObject({ name: 'ValidationException', message: expect.stringMatching(/maximum allowed size/i) });
  });
});
