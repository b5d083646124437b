import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, pollExecution, publishFixtures, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A callback receiver on loopback. Each test has its own path (`/hook/<tag>`), so a late callback of another test
 * never lands in its list; a tag answers the statuses it is told to, in order, then 204.
 */
function receiver() {
  const deliveries = new Map<string, Delivery[]>();
  const statuses = new Map<string, number[]>();
  let notify: () => void = () => undefined;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    const tag = (request.url ?? '').replace(/^\/hook\//, '');
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      deliveries.set(tag, [...(deliveries.get(tag) ?? []), { headers: request.headers, body: Buffer.concat(chunks).toString('utf8') }]);
      response.writeHead(statuses.get(tag)?.shift() ?? 204).end();
      notify();
    });
  });
  const of = (tag: string) => deliveries.get(tag) ?? [];
  return {
    of,
    server,
    answer: (tag: string, ...codes: number[]) => statuses.set(tag, codes),
    url: (tag: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook/${tag}`,
    async waitFor(tag: string, count: number, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (of(tag).length < count && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          notify = resolve;
          setTimeout(resolve, 100);
        });
      }
      return of(tag);
    },
  };
}

let twin: TestTwin;
let client: ReturnType<typeof publishedClient>;
const hook = receiver();

beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_CALLBACKS = '1';
  twin = await startTestTwin({ retryIntervalMs: 50 });
  await publishFixtures(twin);
  client = publishedClient(twin, (await createKey(twin, 'full')).key);
  await new Promise<void>((resolve) => hook.server.listen(0, '127.0.0.1', () => resolve()));
});
afterAll(async () => {
  hook.server.close();
  await twin?.close();
});

describe('completion callbacks', () => {
  it('posts the status response signed per Standard Webhooks, verifiable with the standardwebhooks package', async () => {
    const secret = `whsec_${Buffer.from('a-32-byte-secret-for-the-tests!!').toString('base64')}`;
    const run = await client.execute('echo', {
      user_id: 'u',
      input: { message: 'signed' },
      callback_url: hook.url('signed'),
      webhook_secret: secret,
    });
    expect(run.body.status).toBe('completed');
    const [delivery] = await hook.waitFor('signed', 1);
    expect(delivery).toBeDefined();
    const payload = new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>) as Record<string, unknown>;
    expect(payload).toEqual((await client.getExecution(run.body.execution_id)).body);
    expect(delivery!.headers['webhook-id']).toBe(`msg_${run.body.execution_id}`);
    expect(delivery!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(() =>
      new Webhook(`whsec_${Buffer.from('another-secret-of-32-bytes-long!').toString('base64')}`).verify(
        delivery!.body,
        delivery!.headers as Record<string, string>,
      ),
    ).toThrow();
    expect(JSON.stringify(payload)).not.toContain(secret);
  });

  it('signs with a plain secret as raw bytes (Webhook with format raw), and sends no signature without a secret', async () => {
    const run = await client.execute('router', {
      user_id: 'u',
      input: { kind: 'broken', message: 'x' },
      callback_url: hook.url('raw'),
      webhook_secret: 'plain secret',
    });
    expect(run.body.status).toBe('failed');
    const [signed] = await hook.waitFor('raw', 1);
    const payload = new Webhook('plain secret', { format: 'raw' }).verify(
      signed!.body,
      signed!.headers as Record<string, string>,
    ) as Record<string, unknown>;
    expect(payload).toMatchObject({ status: 'failed', error: 'Broken: x' });

    await client.execute('echo', { user_id: 'u', input: { message: 'x' }, callback_url: hook.url('unsigned') });
    const [unsigned] = await hook.waitFor('unsigned', 1);
    expect(unsigned!.headers['webhook-signature']).toBeUndefined();
    expect(JSON.parse(unsigned!.body).status).toBe('completed');
  });

  it('retries a failing receiver with backoff until it takes the callback, with the same webhook id', async () => {
    hook.answer('retried', 500, 503);
    const run = await client.execute('echo', { user_id: 'u', input: { message: 'retry' }, callback_url: hook.url('retried') });
    const deliveries = await hook.waitFor('retried', 3);
    expect(deliveries).toHaveLength(3);
    expect(new Set(deliveries.map((delivery) => delivery.headers['webhook-id']))).toEqual(new Set([`msg_${run.body.execution_id}`]));
  });

  it('calls back with status cancelled when a running run is stopped', async () => {
    const blocked = client.execute('router', { user_id: 'stop-me', input: { kind: 'slow' }, callback_url: hook.url('stopped') });
    let executionId: string | undefined;
    for (let i = 0; i < 100 && !executionId; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.executions }));
      executionId = Items?.find((item) => item.user_id === 'stop-me' && item.status === 'running')?.execution_id;
    }
    expect((await client.stop(executionId!)).body).toEqual({ execution_id: executionId, status: 'cancelled' });
    expect((await blocked).body.status).toBe('cancelled');
    const [delivery] = await hook.waitFor('stopped', 1);
    expect(JSON.parse(delivery!.body)).toMatchObject({ execution_id: executionId, status: 'cancelled' });
  });

  it('calls back when an execution fails after an approval, and not while it waits', async () => {
    const run = await client.execute('gate', { user_id: 'u', input: {}, callback_url: hook.url('gated') });
    expect(run.body.status).toBe('interrupted');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(hook.of('gated')).toHaveLength(0);
    await client.reject(run.body.execution_id, { feedback: 'no' });
    await pollExecution(client, run.body.execution_id, (body) => body.status === 'failed');
    const [delivery] = await hook.waitFor('gated', 1);
    expect(JSON.parse(delivery!.body)).toMatchObject({ status: 'failed', error: 'no' });
  });
});
