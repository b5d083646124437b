import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFrontDoor, type ServedRequest } from '#lib/twin/iam/front-door.ts';
import { ADMINISTRATOR_POLICY } from '#lib/twin/iam/function-policy.ts';
import { LOCAL_REGION } from '#lib/twin/stores.ts';

/**
 * The front doors' order of events, which round-trip tests read instead of clocks: a request sent after another's
 * answer was read arrived after that answer went out, and two requests sent side by side overlap.
 */
const operator = { name: 'Operator', accessKeyId: 'OPERATOR', secretAccessKey: 'operator-secret', policy: ADMINISTRATOR_POLICY };
const served = new Map<string, ServedRequest>();
/** Events named by table: `upstream:<table>` as a request reaches the store, `served:<table>` as the door records it. */
const events = new EventTarget();
/** Answers of `held-*` tables, which wait until the test releases them. */
const held = new Map<string, () => void>();
const closers: (() => Promise<unknown>)[] = [];
let client: DynamoDBClient;

beforeAll(async () => {
  const upstream = createServer((request, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const table = (JSON.parse(Buffer.concat(chunks).toString()) as { TableName: string }).TableName;
      const answer = () => response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end('{}');
      if (table.startsWith('held-')) held.set(table, answer);
      else answer();
      events.dispatchEvent(new Event(`upstream:${table}`));
    });
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  closers.push(() => {
    upstream.closeAllConnections();
    return new Promise((resolve) => upstream.close(resolve));
  });
  const door = await startFrontDoor({
    service: 'dynamodb',
    upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    port: 0,
    principals: [operator],
    onDenied: () => undefined,
    onServed: (request) => {
      const table = request.resource.replace(/^.*table\//, '');
      served.set(table, request);
      events.dispatchEvent(new Event(`served:${table}`));
    },
  });
  closers.push(() => door.close());
  client = new DynamoDBClient({
    endpoint: door.endpoint,
    region: LOCAL_REGION,
    credentials: { accessKeyId: operator.accessKeyId, secretAccessKey: operator.secretAccessKey },
  });
});
afterAll(async () => {
  client?.destroy();
  for (const close of closers.reverse()) await close();
});

/** Reads from `table`, answering what the front door recorded of the request (recorded as its answer ends). */
async function get(table: string): Promise<ServedRequest> {
  const recorded = once(events, `served:${table}`);
  await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: 'x' } } }));
  await recorded;
  return served.get(table)!;
}

describe("the front doors' order of events", () => {
  it('puts a request sent after an answer was read after that answer', async () => {
    const first = await get('first');
    const then = await get('then');
    expect(first.answered).toBeGreaterThan(first.arrived);
    expect(then.arrived).toBeGreaterThan(first.answered);
  });

  it('puts a request sent beside another before that one is answered', async () => {
    const reached = once(events, 'upstream:held-a');
    const pending = get('held-a');
    await reached;
    // Sent and answered while a's answer is held.
    const beside = await get('beside');
    held.get('held-a')!();
    const a = await pending;
    expect(beside.arrived).toBeGreaterThan(a.arrived);
    expect(beside.arrived).toBeLessThan(a.answered);
  });
});
