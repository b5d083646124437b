import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAMBDA_STREAM_HOLD_BYTES } from '#lib/twin/lambda-streaming.ts';
import { SSE_HEARTBEAT } from '#published/event-stream-response.ts';
import { STREAM_HEARTBEAT_INTERVAL_MS } from '#shared/limits.ts';
import { createKey, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { openResponse } from '../support/http.ts';
import { openSse, type SseStream } from '../support/sse.ts';

/**
 * Whether a streamed write reaches the client before anything follows it, in the two worlds the twin models: by
 * default nothing holds a write (as nothing measured says API Gateway's REST streaming does) and the streams send no
 * filler; with TWIN_STREAM_HOLD_BYTES the twin holds a streaming function's bytes until that many wait, as Lambda
 * has been reported to, and only STREAM_FLUSH_PADDING_BYTES of at least as much gets each event out.
 *
 * The producer waits on the client: the execution stops at an approval after each `status` the client must see, and the
 * test approves only once the client has seen it. Nothing else is written meanwhile (heartbeats are minutes away), so
 * an event that reached the client got there without any later write. No clock decides anything here; a held event
 * would make the wait for it fail after its generous deadline.
 */

/** Three approvals in a row: each one's `interrupted` status is the last thing written until the test answers it. */
const RELAY = {
  id: 'relay',
  name: 'Relay',
  description: 'Three approvals in a row',
  start: 'first',
  nodes: {
    first: { type: 'approval', message: 'First?', next: 'second' },
    second: { type: 'approval', message: 'Second?', next: 'third' },
    third: { type: 'approval', message: 'Third?', next: 'done' },
    done: { type: 'end', output: 'relayed' },
  },
};

interface World {
  twin: TestTwin;
  key: string;
}

/** An execution that waits ten minutes: nothing is written for it meanwhile but heartbeats (25 s apart). */
const PAUSE = {
  id: 'pause',
  name: 'Pause',
  description: 'Ten minutes of nothing',
  start: 'wait',
  nodes: { wait: { type: 'wait', seconds: 600, next: 'done' }, done: { type: 'end', output: 'waited' } },
};

/** A twin with the relay and the pause published (project `relay`); `padding` is the functions' STREAM_FLUSH_PADDING_BYTES. */
async function startWorld(
  options: { streamHoldBytes?: number; padding?: number; streamIdleTimeoutMs?: number; windowMs?: number } = {},
): Promise<World> {
  const { padding, windowMs, ...twinOptions } = options;
  if (padding !== undefined) process.env.STREAM_FLUSH_PADDING_BYTES = String(padding);
  if (windowMs !== undefined) process.env.STREAM_MAX_MS = String(windowMs);
  let twin: TestTwin;
  try {
    twin = await startTestTwin(twinOptions);
  } finally {
    delete process.env.STREAM_FLUSH_PADDING_BYTES;
    delete process.env.STREAM_MAX_MS;
  }
  const dir = mkdtempSync(join(tmpdir(), 'relay-'));
  writeFileSync(join(dir, 'relay.json'), JSON.stringify(RELAY));
  writeFileSync(join(dir, 'pause.json'), JSON.stringify(PAUSE));
  await twin.admin('publish', dir, '--project', 'relay');
  rmSync(dir, { recursive: true, force: true });
  return { twin, key: (await createKey(twin, 'full', { project: 'relay' })).key };
}

const api = (world: World) => `${world.twin.url}/prod/api/v1/published`;
const auth = (world: World) => ({ authorization: `Bearer ${world.key}` });

/** A relay run, started by execute: it answers at the first approval (`interrupted`). */
async function relayRun(world: World): Promise<string> {
  const started = await publishedClient(world.twin, world.key).execute('relay', { user_id: 'u', input: {} });
  expect(started.body).toMatchObject({ status: 'interrupted' });
  return started.body.execution_id as string;
}

/**
 * A relay execution started by an execute whose answer is not awaited: with writes held and no padding, that answer
 * reaches the client only if the execution settles within the gateway's idle limit, which a loaded machine need not
 * do. The execution itself goes on either way; it is found in the executions table once it waits at its first approval.
 */
async function relayRunFromStore(world: World): Promise<string> {
  const answer = openResponse(`${api(world)}/workflows/relay/execute`, {
    method: 'POST',
    headers: auth(world),
    body: JSON.stringify({ user_id: 'u', input: {} }),
  }).then(
    (response) => response.close(),
    () => undefined,
  );
  for (;;) {
    const { Items = [] } = await world.twin.dynamo.send(
      new ScanCommand({
        TableName: world.twin.twin.tables.executions,
        FilterExpression: 'workflow_id = :relay AND #status = :interrupted',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':relay': 'relay', ':interrupted': 'interrupted' },
      }),
    );
    if (Items.length > 0) {
      await answer;
      return Items[0]!.execution_id as string;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const isStatus = (status: string) => (event: { event: string; data: any }) => event.event === 'status' && event.data.status === status;

/**
 * Subscribes to the execution's lifecycle and walks it through its three approvals, answering each only once the client has
 * seen the `interrupted` status that asks for it; answers the statuses seen.
 */
async function walkRelay(world: World, executionId: string): Promise<string[]> {
  const subscription = await openSse(`${api(world)}/executions/${executionId}/events`, { headers: auth(world) });
  const client = publishedClient(world.twin, world.key);
  try {
    expect(subscription.status).toBe(200);
    for (let answered = 0; answered < 3; answered += 1) {
      const asking = await subscription.waitFor((event) => isStatus('interrupted')(event) && event.id! > lastId(subscription));
      seen.set(subscription, asking.id!);
      const approved = await client.approve(executionId, { feedback: `step ${answered + 1}` });
      expect(approved.status).toBe(200);
    }
    await subscription.waitFor(isStatus('completed'));
    await subscription.ended;
    return subscription.events.map((event) => `${event.event}:${event.data.status}`);
  } finally {
    subscription.close();
  }
}

const seen = new WeakMap<SseStream, number>();
const lastId = (stream: SseStream) => seen.get(stream) ?? 0;

describe('by default nothing holds a streamed write, and the streams send no filler', () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(() => world?.twin.close());

  it('GET /executions/{id}/events: each status reaches the client before anything is written after it', async () => {
    const executionId = await relayRun(world);
    const statuses = await walkRelay(world, executionId);
    expect(statuses.filter((status) => status === 'status:interrupted')).toHaveLength(3);
    expect(statuses.at(-1)).toBe('status:completed');
  });

  it('POST /execute: the 200 and its first whitespace (a single space) reach the client while the execution waits', async () => {
    const response = await openResponse(`${api(world)}/workflows/pause/execute`, {
      method: 'POST',
      headers: auth(world),
      body: JSON.stringify({ user_id: 'u', input: {} }),
    });
    try {
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('application/json');
      await until(() => response.body().length > 0);
      expect(response.body()).toBe(' ');
      expect(response.ended()).toBe(false);
    } finally {
      // The function is not told that its caller left (as on Lambda): it answers once the execution ends, stopped here.
      response.close();
      const executionId = response.headers['x-execution-id'] as string;
      expect((await publishedClient(world.twin, world.key).stop(executionId)).status).toBe(200);
      await world.twin.settled(['PublishedExecute']);
    }
  });

  it('POST /execute: the document reaches the client as the execution settles (here at its first approval)', async () => {
    const response = await openResponse(`${api(world)}/workflows/relay/execute`, {
      method: 'POST',
      headers: auth(world),
      body: JSON.stringify({ user_id: 'u', input: {} }),
    });
    await until(() => response.ended());
    expect(response.body()).toMatch(/^ \{/);
    expect(JSON.parse(response.body())).toMatchObject({ status: 'interrupted' });
  });

  it('keeps a silent subscription under 2 KB a minute: its heartbeat is the comment alone', async () => {
    const executionId = await relayRun(world);
    const subscription = await openSse(`${api(world)}/executions/${executionId}/events`, { headers: auth(world) });
    try {
      await subscription.waitFor(isStatus('interrupted'));
      // The body so far is the opening heartbeat and the one event: no filler anywhere.
      expect(subscription.text.startsWith(SSE_HEARTBEAT)).toBe(true);
      expect(subscription.comments.filter((comment) => comment.trim() !== 'keep-alive')).toEqual([]);
      // Computed from what a heartbeat is: at most 60 s / 25 s heartbeats a minute, 14 bytes each.
      const perMinute = Math.ceil(60_000 / STREAM_HEARTBEAT_INTERVAL_MS) * Buffer.byteLength(SSE_HEARTBEAT);
      expect(perMinute).toBeLessThanOrEqual(2048);
    } finally {
      subscription.close();
    }
  });
});

describe(`holding writes until ${LAMBDA_STREAM_HOLD_BYTES} bytes wait, with as much padding`, () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld({ streamHoldBytes: LAMBDA_STREAM_HOLD_BYTES, padding: LAMBDA_STREAM_HOLD_BYTES });
  });
  afterAll(() => world?.twin.close());

  it('GET /executions/{id}/events: each status still reaches the client before anything is written after it', async () => {
    const executionId = await relayRun(world);
    const statuses = await walkRelay(world, executionId);
    expect(statuses.filter((status) => status === 'status:interrupted')).toHaveLength(3);
    expect(statuses.at(-1)).toBe('status:completed');
    // Each event carries 100 KB of filler through the twin's hold: a loaded machine needs more than vitest's default.
  }, 180_000);
});

describe(`holding writes until ${LAMBDA_STREAM_HOLD_BYTES} bytes wait, without padding`, () => {
  // The gateway cuts a stream after 8 s without a byte reaching it (held bytes never do): long enough for the blocking
  // execute that starts the execution, whose answer reaches the client only as its response ends. The function is not
  // told (as on Lambda) and serves its stream to nobody until its window ends, 10 s after it opened.
  let world: World;
  beforeAll(async () => {
    world = await startWorld({ streamHoldBytes: LAMBDA_STREAM_HOLD_BYTES, streamIdleTimeoutMs: 8_000, windowMs: 10_000 });
  });
  afterAll(() => world?.twin.close());

  it('holds the status and the event back until the gateway gives up on the silent stream: the client gets nothing', async () => {
    const executionId = await relayRunFromStore(world);
    // Not even the status line: the function's first bytes (the opening comment, then the `status` event) were held,
    // and the idle cut dropped them with the connection.
    await expect(openResponse(`${api(world)}/executions/${executionId}/events`, { headers: auth(world) })).rejects.toThrow(
      /socket hang up|ECONNRESET/,
    );
    await world.twin.settled(['PublishedExecutionEvents']);
  }, 120_000);
});

/** Resolves once `check` holds, looking again every few milliseconds; rejects after a generous deadline. */
async function until(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
