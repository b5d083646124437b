import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callEvent } from '../support/events.ts';
import { publishFixtures, storedRunsOf } from '../support/published.ts';
import { boundLink, refusedAdmin, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { openSse, type SseStream } from '../support/sse.ts';
import type { ServedRequest } from '#lib/twin/iam/front-door.ts';
import { STREAM_END_MARGIN_MS } from '#shared/limits.ts';

/**
 * Open streams on the twin as on Lambda: a function is not told that its caller left (the default; Lambda serves a
 * stream on to its end, "streamed responses are not interrupted or stopped when the invoking client connection is
 * broken", https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html), so an abandoned stream
 * holds its slot of its key's and the deployment's open streams until its window ends, and never longer. The window
 * is shortened to 3 s (STREAM_MAX_MS; 5 minutes by default), the deployment's open streams to 6 (MAX_OPEN_STREAMS).
 */
const WINDOW_MS = 3_000;
const DEPLOYMENT_STREAMS = 6;
const STREAM_ROUTES = ['PublishedStreamWorkflow', 'PublishedStreamExecution', 'PublishedExecutionEvents', 'PublishedStreamProbe'];

let twin: TestTwin;
const served: ServedRequest[] = [];
beforeAll(async () => {
  process.env.STREAM_MAX_MS = String(WINDOW_MS);
  process.env.MAX_OPEN_STREAMS = String(DEPLOYMENT_STREAMS);
  twin = await startTestTwin({ onStoreRequest: (request) => void served.push(request) });
  await publishFixtures(twin);
});
afterAll(async () => {
  delete process.env.STREAM_MAX_MS;
  delete process.env.MAX_OPEN_STREAMS;
  await twin?.close();
});

const base = () => `${twin.url}/api/v1/published`;
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function keyWith(maxOpenStreams?: number): Promise<{ key: string; keyId: string }> {
  const limit = maxOpenStreams === undefined ? [] : ['--max-open-streams', String(maxOpenStreams)];
  const created = await twin.admin('keys', 'create', '--name', 'streams', '--preset', 'full', ...limit);
  return { key: created.key as string, keyId: created.key_id as string };
}

/** An execution paused at its approval: its log says nothing more until someone answers. */
async function waitingExecution(key: string): Promise<string> {
  const stream = await openSse(`${base()}/workflows/support-bot/stream`, {
    method: 'POST',
    headers: auth(key),
    body: { user_id: 'streams', input: { message: 'hold' } },
  });
  await stream.ended;
  expect(stream.events.at(-1)!.data.status).toBe('interrupted');
  // The stream gives its slots back as its invocation ends, just after its last byte.
  await twin.settled(['PublishedStreamWorkflow']);
  return stream.events[0]!.data.execution_id as string;
}

async function subscribe(key: string, executionId: string): Promise<SseStream> {
  const subscription = await openSse(`${base()}/executions/${executionId}/events`, { headers: auth(key) });
  expect(subscription.status).toBe(200);
  await subscription.waitFor((event) => event.event === 'status');
  return subscription;
}

/** The leases of a scope's open streams, as stored (`key#<id>` or `deployment`). */
async function leasesOf(scope: string): Promise<{ until_ms: number }[]> {
  const { Items } = await twin.dynamo.send(
    new QueryCommand({
      TableName: twin.twin.tables.streamEvents,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `open-streams#${scope}` },
      ConsistentRead: true,
    }),
  );
  return (Items ?? []) as { until_ms: number }[];
}

/** Resolves with the first store read `principal` starts after `sinceMs` (performance.now()), as the twin's front door serves it. */
async function nextReadBy(principal: string, sinceMs: number): Promise<ServedRequest> {
  for (let waited = 0; waited < 30_000; waited += 10) {
    const read = served.find(
      (request) => request.principal === principal && request.operation === 'Query' && request.startedAtMs > sinceMs,
    );
    if (read) return read;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${principal} read nothing in the 30 s after ${sinceMs.toFixed(0)} ms`);
}

describe('an abandoned stream', () => {
  it('is served on to the end of its window, as Lambda serves it, and then frees its slot', async () => {
    const { key, keyId } = await keyWith(1);
    const executionId = await waitingExecution(key);
    const openedAt = Date.now();
    const subscription = await subscribe(key, executionId);
    const [lease] = await leasesOf(`key#${keyId}`);
    expect(lease!.until_ms).toBeLessThanOrEqual(Date.now() + WINDOW_MS + STREAM_END_MARGIN_MS);
    expect(lease!.until_ms).toBeGreaterThan(openedAt);

    subscription.close();
    // The front door times requests by this process's performance clock (the twin runs in it).
    const closedAt = performance.now();
    // Nobody told the function: it reads the log on after its caller left, and so holds the key's one slot.
    await nextReadBy('PublishedExecutionEvents', closedAt);
    const held = await fetch(`${base()}/executions/${executionId}/events`, { headers: auth(key) });
    expect(held.status).toBe(429);
    await held.text();

    // Its window ends it, with nobody having answered the approval; it gives its slots back as it ends.
    await twin.settled(['PublishedExecutionEvents']);
    expect(await leasesOf(`key#${keyId}`)).toEqual([]);
    expect((await twin.admin('keys', 'list')).keys.find((entry: { key_id: string }) => entry.key_id === keyId)).toMatchObject({
      max_open_streams: 1,
    });
    const again = await subscribe(key, executionId);
    again.close();
    await twin.settled(STREAM_ROUTES);
  }, 120_000);
});

describe('a key with --max-open-streams 3', () => {
  it('gets 429 with Retry-After and a detail on its 4th concurrent stream, while other keys and webhook ingest are served', async () => {
    const limited = await keyWith(3);
    const other = await keyWith();
    const executionId = await waitingExecution(limited.key);
    const open = [
      await subscribe(limited.key, executionId),
      await subscribe(limited.key, executionId),
      await subscribe(limited.key, executionId),
    ];

    const fourth = await fetch(`${base()}/executions/${executionId}/events`, { headers: auth(limited.key) });
    expect(fourth.status).toBe(429);
    expect(fourth.headers.get('content-type')).toBe('application/json');
    const retryAfter = Number(fourth.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((WINDOW_MS + STREAM_END_MARGIN_MS) / 1000));
    const { detail } = (await fourth.json()) as { detail: string };
    expect(detail).toMatch(/^This key has 3 streams open, its limit \(max_open_streams 3\); one of them ends within \d+ s at the latest/);

    // A stream that would start an execution is refused before it starts one.
    const runsBefore = (await storedRunsOf(twin, 'refused')).length;
    const started = await fetch(`${base()}/workflows/echo/stream`, {
      method: 'POST',
      headers: { ...auth(limited.key), 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'refused', input: { message: 'hi' } }),
    });
    expect(started.status).toBe(429);
    await started.text();
    expect((await storedRunsOf(twin, 'refused')).length).toBe(runsBefore);

    // Another key streams the same execution, and the webhook takes an event.
    const theirs = await subscribe(other.key, executionId);
    const { token } = await boundLink(twin, 'calls');
    const ingest = await fetch(`${twin.webhookUrl}/api/v1/webhooks/${token}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(callEvent()),
    });
    expect(ingest.status).toBe(201);

    for (const stream of [...open, theirs]) stream.close();
    await twin.settled(STREAM_ROUTES);
    const again = await subscribe(limited.key, executionId);
    again.close();
    await twin.settled(STREAM_ROUTES);
  }, 120_000);
});

describe("the deployment's open streams", () => {
  it('refuses a stream past MAX_OPEN_STREAMS, all keys together, with 429 naming the deployment', async () => {
    await twin.settled(STREAM_ROUTES);
    const first = await keyWith(3);
    const second = await keyWith(3);
    const third = await keyWith();
    const executionId = await waitingExecution(first.key);
    const open: SseStream[] = [];
    for (const { key } of [first, first, first, second, second, second]) open.push(await subscribe(key, executionId));
    expect(open).toHaveLength(DEPLOYMENT_STREAMS);

    const refused = await fetch(`${base()}/executions/${executionId}/events`, { headers: auth(third.key) });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(
      /^The API has 6 streams open, as many as this deployment serves at once; one of them ends within \d+ s/,
    );
    // The refused stream gave back the slot of its key it had taken first.
    expect((await leasesOf(`key#${third.keyId}`)).filter((lease) => lease.until_ms > Date.now())).toEqual([]);

    for (const stream of open) stream.close();
    await twin.settled(STREAM_ROUTES);
    expect((await leasesOf('deployment')).filter((lease) => lease.until_ms > Date.now())).toEqual([]);
  }, 120_000);
});

describe('keys create --max-open-streams', () => {
  it.each([['0'], ['10001'], ['2.5'], ['many']])('refuses %s with exit 2, naming the flag and its bounds', async (value) => {
    const refusal = await refusedAdmin('keys', 'create', '--name', 'n', '--preset', 'full', '--max-open-streams', value);
    expect(refusal).toEqual({ exitCode: 2, error: `--max-open-streams must be a whole number of streams from 1 to 10,000, got ${value}` });
  });

  it('gives a key the default, 100, unless set, and keys list shows it', async () => {
    const { keyId } = await keyWith();
    const listed = (await twin.admin('keys', 'list')).keys.find((entry: { key_id: string }) => entry.key_id === keyId);
    expect(listed).toMatchObject({ max_open_streams: 100 });
  });
});
