import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteItemCommand, DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';
import { localTableName } from '#lib/twin/local-names.ts';

/**
 * DynamoDB bills a write to a table with a global secondary index for the index too: an item that enters the index is
 * one more write unit per KB of its projected attributes, one that leaves it one more, one whose index key changes
 * both, one whose projected attributes change one more; a write that leaves the entry alone costs the index nothing
 * (docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes). The twin's
 * DynamoDB reports the same consumed capacity, so the meter bills what AWS does: the inbound events table, whose
 * `by_received` index is keyed by `received_key` and projects `state` but not `body_bytes`.
 */
let stores: LocalStores;
let client: DynamoDBClient;
let dataDir: string;
const TableName = localTableName('inboundEvents');
const Key = { source_id: { S: 'src' }, external_id: { S: 'e-1' } };

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'index-capacity-'));
  stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
  client = new DynamoDBClient({ endpoint: stores.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
});

afterAll(async () => {
  client?.destroy();
  await stores?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const units = (output: { ConsumedCapacity?: { CapacityUnits?: number } }) => output.ConsumedCapacity?.CapacityUnits;
const update = (expression: string, values: Record<string, { S: string } | { N: string }>) =>
  client.send(
    new UpdateItemCommand({
      TableName,
      Key,
      UpdateExpression: expression,
      ExpressionAttributeValues: values,
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );

describe("the twin's DynamoDB bills index writes as DynamoDB does", () => {
  it('charges a put that enters the index, an update of what it projects, a new index key, and a delete, for the index too', async () => {
    const item = { ...Key, received_key: { S: 'k1' }, state: { S: 'queued' }, body_bytes: { N: '10' } };
    // Into the table and into the index: 1 + 1.
    expect(units(await client.send(new PutItemCommand({ TableName, Item: item, ReturnConsumedCapacity: 'TOTAL' })))).toBe(2);
    // body_bytes is not projected: the index entry stays as it was.
    expect(units(await update('SET body_bytes = :b', { ':b': { N: '11' } }))).toBe(1);
    // state is projected: the entry is written again.
    expect(
      units(
        await client.send(
          new UpdateItemCommand({
            TableName,
            Key,
            UpdateExpression: 'SET #state = :s',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':s': { S: 'handing' } },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        ),
      ),
    ).toBe(2);
    // A new index key: the old entry deleted, a new one written: 1 + 1 + 1.
    expect(units(await update('SET received_key = :k', { ':k': { S: 'k2' } }))).toBe(3);
    // Out of the table and out of the index: 1 + 1.
    expect(units(await client.send(new DeleteItemCommand({ TableName, Key, ReturnConsumedCapacity: 'TOTAL' })))).toBe(2);
  });

  it('charges nothing for an index an item has no key for', async () => {
    const item = { source_id: { S: 'src' }, external_id: { S: 'e-2' }, state: { S: 'queued' } };
    expect(units(await client.send(new PutItemCommand({ TableName, Item: item, ReturnConsumedCapacity: 'TOTAL' })))).toBe(1);
  });
});
