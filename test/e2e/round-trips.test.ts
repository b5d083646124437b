import { ConditionalCheckFailedException, DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/local/stores.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { postJson } from '../support/http.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { sequentialSteps, storeRequestRecorder } from '../support/round-trips.ts';

/**
 * The datastore round trips of one webhook request on a warm link, counted at the twin's front doors: how many
 * requests, and how many of them one after another. Issue 13 brings these down; this test pins where they are, so
 * a change that adds a round trip has to say so here.
 */
const recorder = storeRequestRecorder();
let twin: TestTwin;

beforeAll(async () => {
  twin = await startTestTwin({ onStoreRequest: recorder.onStoreRequest });
});
afterAll(() => twin?.close());

describe('round trips per webhook request (warm link)', () => {
  it('counts a call event, its duplicate and a dialog', async () => {
    const calls = await boundLink(twin, 'calls');
    const dialogs = await boundLink(twin, 'dialogs');
    const url = (token: string) => `${twin.url}/api/v1/webhooks/${token}/events`;
    expect((await postJson(url(calls.token), callEvent())).status).toBe(201);
    expect((await postJson(url(dialogs.token), textEvent(3))).status).toBe(201);

    const event = callEvent();
    const call = await recorder.during('WebhookPostEvent', async () => expect((await postJson(url(calls.token), event)).status).toBe(201));
    const duplicate = await recorder.during('WebhookPostEvent', async () => expect((await postJson(url(calls.token), event)).status).toBe(200));
    const dialog = await recorder.during('WebhookPostEvent', async () => expect((await postJson(url(dialogs.token), textEvent(50))).status).toBe(201));

    // Which requests, as a sorted list (parallel ones arrive in either order), and how many steps one after another.
    // A parallel pair can look sequential when a socket is slow to open, so the steps may read one more, never fewer.
    const operations = (served: typeof call) => served.map((request) => `${request.operation} ${request.resource.replace(/^.*table\//, '')}`).sort();
    expect(operations(call)).toEqual([
      'BatchGetItem local-links', // token and guessing guard, one read
      'GetItem local-links', // the link, beside the rate window
      'PutItem local-inboundEvents', // the conditional put
      'UpdateItem local-counters', // rate window (per minute)
      'UpdateItem local-counters', // daily quota
      'UpdateItem local-usage', // the usage meter
    ]);
    // The refused put answers the stored event (ALL_OLD): a duplicate reads nothing more, and gives its quota unit back.
    expect(operations(duplicate)).toEqual([...operations(call), 'UpdateItem local-counters'].sort());
    expect(operations(dialog)).toEqual(operations(call));
    for (const [kind, served, pinned] of [['call', call, 5], ['duplicate', duplicate, 6], ['dialog', dialog, 5]] as const) {
      expect(sequentialSteps(served), kind).toBeGreaterThanOrEqual(pinned);
      expect(sequentialSteps(served), kind).toBeLessThanOrEqual(pinned + 1);
    }
  });
});

describe('the twin answers a failed condition with the old item, as DynamoDB does', () => {
  it('adds Item to ConditionalCheckFailedException when the write asked for ALL_OLD, and only then', async () => {
    const client = new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const table = twin.twin.tables.inboundEvents;
    const item = { source_id: { S: 'all-old' }, external_id: { S: 'e1' }, event_id: { N: '7' }, expires_at: { N: '4102444800' } };
    await client.send(new PutItemCommand({ TableName: table, Item: item }));
    const refused = (input: { ReturnValuesOnConditionCheckFailure?: 'ALL_OLD' | 'NONE' }) =>
      client.send(new PutItemCommand({ TableName: table, Item: { ...item, event_id: { N: '8' } }, ConditionExpression: 'attribute_not_exists(external_id)', ...input })).then(
        () => undefined,
        (error: unknown) => error,
      );
    const withOld = await refused({ ReturnValuesOnConditionCheckFailure: 'ALL_OLD' });
    expect(withOld).toBeInstanceOf(ConditionalCheckFailedException);
    expect((withOld as ConditionalCheckFailedException).Item).toEqual(item);
    expect((await refused({})) as ConditionalCheckFailedException).toMatchObject({ name: 'ConditionalCheckFailedException', Item: undefined });
    const update = await client
      .send(new UpdateItemCommand({ TableName: table, Key: { source_id: item.source_id, external_id: item.external_id }, UpdateExpression: 'SET event_id = :n', ConditionExpression: 'event_id = :x', ExpressionAttributeValues: { ':n': { N: '9' }, ':x': { N: '1' } }, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }))
      .then(() => undefined, (error: unknown) => error as ConditionalCheckFailedException);
    expect(update?.Item).toEqual(item);
    client.destroy();
  });
});
