import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  UpdateItemCommand,
  type DynamoDBServiceException,
  type PutItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdsLoneSurrogate, NOT_UTF8_MESSAGE } from '#lib/twin/iam/dynamodb-strings.ts';
import { startFrontDoor } from '#lib/twin/iam/front-door.ts';
import { ADMINISTRATOR_POLICY } from '#lib/twin/iam/function-policy.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localTableName } from '#lib/twin/local-names.ts';
import { startDynamo } from '#lib/twin/stores.ts';

/**
 * DynamoDB's strings are Unicode with UTF-8 binary encoding
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html), and a
 * lone surrogate has no UTF-8 form. The embedded store keeps one as it came; the twin's front door refuses the request
 * as DynamoDB refuses one it cannot validate: 400 ValidationException, nothing written. (The message is the twin's
 * wording in DynamoDB's shape.)
 */
const operator = { name: 'Operator', accessKeyId: 'OPERATOR', secretAccessKey: 'operator-secret', policy: ADMINISTRATOR_POLICY };
const TABLE = localTableName('links');
const LONE = 'x\ud800';
let dataDir: string;
let store: DynamoDBClient;
let client: DynamoDBClient;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'dynamodb-strings-'));
  const dynamo = await startDynamo(dataDir, 0);
  closers.push(() => dynamo.close());
  const door = await startFrontDoor({
    service: 'dynamodb',
    upstream: dynamo.endpoint,
    port: 0,
    principals: [operator],
    onDenied: () => {},
  });
  closers.push(() => door.close());
  store = new DynamoDBClient({ endpoint: dynamo.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  client = new DynamoDBClient({
    endpoint: door.endpoint,
    region: LOCAL_REGION,
    credentials: { accessKeyId: operator.accessKeyId, secretAccessKey: operator.secretAccessKey },
  });
});
afterAll(async () => {
  client?.destroy();
  store?.destroy();
  for (const close of closers.reverse()) await close();
  rmSync(dataDir, { recursive: true, force: true });
});

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as DynamoDBServiceException,
  );
const stored = async (pk: string) => (await store.send(new ScanCommand({ TableName: TABLE }))).Items?.filter((item) => item.pk?.S === pk);

describe('a lone surrogate sent to DynamoDB', () => {
  it('is kept by the embedded store alone: the check has to be the front door’s', async () => {
    await store.send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'bare-store' }, v: { S: LONE } } }));
    expect((await stored('bare-store'))?.[0]?.v?.S).toBe(LONE);
  });

  it.each<[string, PutItemCommandInput['Item']]>([
    ['a string value', { pk: { S: 'value' }, v: { S: LONE } }],
    ['the key', { pk: { S: `key${LONE}` } }],
    ['an attribute name', { pk: { S: 'name' }, [`a${LONE}`]: { S: 'v' } }],
    ['a map key, nested', { pk: { S: 'map' }, m: { M: { inner: { M: { [LONE]: { N: '1' } } } } } }],
    ['a string set member', { pk: { S: 'set' }, s: { SS: ['a', LONE] } }],
    ['a list element', { pk: { S: 'list' }, l: { L: [{ S: 'ok' }, { S: LONE }] } }],
  ])('is refused in %s of PutItem with 400 ValidationException, and nothing is written', async (_, item) => {
    const error = await refusal(client.send(new PutItemCommand({ TableName: TABLE, Item: item })));

    expect(error?.name).toBe('ValidationException');
    expect(error?.message).toBe(NOT_UTF8_MESSAGE);
    expect(error?.$metadata.httpStatusCode).toBe(400);
    expect(await stored(String(item!.pk!.S))).toEqual([]);
  });

  it('is refused in an update’s values, a read’s key and a query’s condition', async () => {
    await client.send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'target' }, v: { S: 'before' } } }));
    const update = new UpdateItemCommand({
      TableName: TABLE,
      Key: { pk: { S: 'target' } },
      UpdateExpression: 'SET v = :v',
      ExpressionAttributeValues: { ':v': { S: LONE } },
    });
    const query = new QueryCommand({
      TableName: TABLE,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: LONE } },
    });
    const get = new GetItemCommand({ TableName: TABLE, Key: { pk: { S: LONE } } });
    for (const sent of [client.send(update), client.send(get), client.send(query)]) {
      expect((await refusal(sent))?.name).toBe('ValidationException');
    }
    expect((await stored('target'))?.[0]?.v?.S).toBe('before');
  });

  it('takes emoji and every other well-formed string', async () => {
    await client.send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'emoji' }, v: { S: 'привет 😀 \u0000 \u202e' } } }));
    expect((await stored('emoji'))?.[0]?.v?.S).toBe('привет 😀 \u0000 \u202e');
  });
});

describe('holdsLoneSurrogate', () => {
  const body = (json: string) => Buffer.from(json);

  it('finds a lone surrogate escape in either case, in a key or a value', () => {
    expect(holdsLoneSurrogate(body('{"Item":{"v":{"S":"\\ud800"}}}'))).toBe(true);
    expect(holdsLoneSurrogate(body('{"Item":{"v":{"S":"\\uDFFF"}}}'))).toBe(true);
    expect(holdsLoneSurrogate(body('{"Item":{"\\udc00":{"S":"v"}}}'))).toBe(true);
    expect(holdsLoneSurrogate(body('{"Item":{"v":{"L":[{"S":"\\ud83d"}]}}}'))).toBe(true);
  });

  it('takes a pair spelled as two escapes, and an escaped backslash before u', () => {
    expect(holdsLoneSurrogate(body('{"Item":{"v":{"S":"\\ud83d\\ude00"}}}'))).toBe(false);
    expect(holdsLoneSurrogate(body('{"Item":{"v":{"S":"\\\\ud800"}}}'))).toBe(false);
    expect(holdsLoneSurrogate(body('{"Item":{"v":{"S":"\\u00e9 plain"}}}'))).toBe(false);
  });
});
