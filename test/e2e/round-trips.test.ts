import { ConditionalCheckFailedException, DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/stores.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { postJson } from '../support/http.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { sequentialSteps, storeRequestRecorder } from '../support/round-trips.ts';

/**
 * The datastore round trips of one webhook request on a warm link, counted at the twin's front doors: how many
 * requests, and how many of them one after another. This test pins where they are, so a change that adds a round
 * trip has to say so here.
 */
const recorder = storeRequestRecorder();
let twin: TestTwin;

beforeAll(async () => {
  twin = await startTestTwin({ onStoreRequest: recorder.onStoreRequest });
});
afterAll(() => twin?.close());

describe('round trips per webhook request (warm link)', () => {
  it('counts a call event, its duplicate and a dialog: two steps for an event, three for a duplicate', async () => {
    const calls = await boundLink(twin, 'calls');
    const dialogs = await boundLink(twin, 'dialogs');
    const url = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/events`;
    // Warm: the function has read the link within its second of memory (LINK_CACHE_MS) and holds a block of event ids.
    const warm = async (token: string, event: object) => expect((await postJson(url(token), event)).status).toBe(201);

    await warm(calls.token, callEvent());
    const event = callEvent();
    const call = await recorder.during(
      'WebhookPostEvent',
      async () => expect((await postJson(url(calls.token), event)).status).toBe(201),
      twin,
    );
    await warm(calls.token, callEvent());
    const duplicate = await recorder.during(
      'WebhookPostEvent',
      async () => expect((await postJson(url(calls.token), event)).status).toBe(200),
      twin,
    );
    await warm(dialogs.token, textEvent(3));
    const dialog = await recorder.during(
      'WebhookPostEvent',
      async () => expect((await postJson(url(dialogs.token), textEvent(50))).status).toBe(201),
      twin,
    );

    // Which requests, as a sorted list (parallel ones arrive in either order), and how many steps one after another.
    // A parallel pair can look sequential when a socket is slow to open, so the steps may read one more, never fewer.
    // Halfway through the link's second in memory, one request reads the token again beside the limits update: one
    // request more in the same steps, left out here. A valid token never reads the guessing counter.
    const operations = (served: typeof call) =>
      served
        .map((request) => `${request.operation} ${request.resource.replace(/^.*table\//, '')}`)
        .filter((operation) => operation !== 'GetItem local-links')
        .sort();
    expect(operations(call)).toEqual([
      'PutItem local-inboundEvents', // the conditional put
      'UpdateItem local-usage', // the link's minute and day, and the request's usage: one update of the link's day item
    ]);
    // The refused put answers the stored event (ALL_OLD); the day's unit goes back, with the usage the event would have cost.
    expect(operations(duplicate)).toEqual([...operations(call), 'UpdateItem local-usage'].sort());
    expect(operations(dialog)).toEqual(operations(call));
    for (const [kind, served, pinned] of [
      ['call', call, 2],
      ['duplicate', duplicate, 3],
      ['dialog', dialog, 2],
    ] as const) {
      expect(sequentialSteps(served), kind).toBeGreaterThanOrEqual(pinned);
      expect(sequentialSteps(served), kind).toBeLessThanOrEqual(pinned + 1);
    }
  });

  it('reads the token item alone for a link not in memory, then takes the same two steps', async () => {
    const link = await boundLink(twin, 'calls');
    const url = `${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`;
    const cold = await recorder.during('WebhookPostEvent', async () => expect((await postJson(url, callEvent())).status).toBe(201), twin);
    const operations = cold.map((request) => `${request.operation} ${request.resource.replace(/^.*table\//, '')}`).sort();
    // A new event id block may be reserved on the way (one counter update in a thousand events), and a new link
    // remembers the event's channel and direction (on the link and the token's copy), whose units a second usage
    // write carries.
    expect(operations.filter((operation) => !/^UpdateItem local-(counters|links|usage)$/.test(operation))).toEqual([
      'GetItem local-links', // the token item, with its copy of the link
      'PutItem local-inboundEvents',
    ]);
    expect(operations.filter((operation) => operation === 'UpdateItem local-usage').length).toBeGreaterThanOrEqual(1);
    expect(operations.filter((operation) => operation === 'UpdateItem local-links')).toHaveLength(4);
  });
});

describe('the twin answers a failed condition with the old item, as DynamoDB does', () => {
  it('adds Item to ConditionalCheckFailedException when the write asked for ALL_OLD, and only then', async () => {
    const client = new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const table = twin.twin.tables.inboundEvents;
    const item = { source_id: { S: 'all-old' }, external_id: { S: 'e1' }, event_id: { N: '7' }, expires_at: { N: '4102444800' } };
    await client.send(new PutItemCommand({ TableName: table, Item: item }));
    const refused = (input: { ReturnValuesOnConditionCheckFailure?: 'ALL_OLD' | 'NONE' }) =>
      client
        .send(
          new PutItemCommand({
            TableName: table,
            Item: { ...item, event_id: { N: '8' } },
            ConditionExpression: 'attribute_not_exists(external_id)',
            ...input,
          }),
        )
        .then(
          () => undefined,
          (error: unknown) => error,
        );
    const withOld = await refused({ ReturnValuesOnConditionCheckFailure: 'ALL_OLD' });
    expect(withOld).toBeInstanceOf(ConditionalCheckFailedException);
    expect((withOld as ConditionalCheckFailedException).Item).toEqual(item);
    expect((await refused({})) as ConditionalCheckFailedException).toMatchObject({
      name: 'ConditionalCheckFailedException',
      Item: undefined,
    });
    const update = await client
      .send(
        new UpdateItemCommand({
          TableName: table,
          Key: { source_id: item.source_id, external_id: item.external_id },
          UpdateExpression: 'SET event_id = :n',
          ConditionExpression: 'event_id = :x',
          ExpressionAttributeValues: { ':n': { N: '9' }, ':x': { N: '1' } },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      )
      .then(
        () => undefined,
        (error: unknown) => error as ConditionalCheckFailedException,
      );
    expect(update?.Item).toEqual(item);
    client.destroy();
  });
});
