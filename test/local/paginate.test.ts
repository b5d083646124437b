import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allStoredItems, storedPages } from '#shared/store/paginate.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localTableName, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';

/** The one pagination of every listing, against the embedded DynamoDB (which pages by `Limit` as DynamoDB does). */
describe('stored pages', () => {
  let dataDir: string;
  let stores: LocalStores;
  let dynamo: DynamoDBDocumentClient;
  let calls = 0;
  const pk = `paginate#${randomUUID()}`;
  const query = () => ({
    TableName: localTableName('streamEvents'),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    Limit: 2,
  });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'paginate-'));
    stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
    dynamo = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: stores.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    );
    for (let i = 0; i < 5; i++)
      await dynamo.send(new PutCommand({ TableName: localTableName('streamEvents'), Item: { pk, sk: `s${i}`, n: i } }));
    dynamo.middlewareStack.add((next) => (args) => ((calls += 1), next(args)), { step: 'initialize', name: 'countCalls' });
  });
  afterAll(async () => {
    dynamo?.destroy();
    await stores?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('follows every page to the last item, in order', async () => {
    calls = 0;
    const items = await allStoredItems<{ n: number }>(dynamo, { query: query() });
    expect(items.map((item) => item.n)).toEqual([0, 1, 2, 3, 4]);
    // Pages of 2, 2 and 1 (DynamoDB cannot know the third is the last until it reads it).
    expect(calls).toBe(3);
  });

  it('reads no further page once the caller has what it needs', async () => {
    calls = 0;
    const seen: number[] = [];
    for await (const page of storedPages<{ n: number }>(dynamo, { query: query() })) {
      seen.push(...page.map((item) => item.n));
      if (seen.length >= 2) break;
    }
    expect(seen).toEqual([0, 1]);
    expect(calls).toBe(1);
  });

  it('pages a Scan the same way', async () => {
    const items = await allStoredItems<{ n: number; pk: string }>(dynamo, {
      scan: { TableName: localTableName('streamEvents'), FilterExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, Limit: 2 },
    });
    expect(items.map((item) => item.n).sort()).toEqual([0, 1, 2, 3, 4]);
  });
});
