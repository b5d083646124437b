import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedClient, startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';
import { documentedFetch } from '../support/fetch.ts';
import { http } from '../support/http.ts';
import { openSse } from '../support/sse.ts';

/**
 * A finished stream must not invite reconnects. WHATWG EventSource reconnects after every response that ends
 * (every ~3 s, for ever) unless the answer is not a 200 event stream; 204 is the one that means "stop". Proven
 * with the `eventsource` package (the EventSource most Node and bundled browser apps use) against the twin.
 */

let twin: TestTwin;
let key: string;
let client: ReturnType<typeof publishedClient>;
beforeAll(async () => {
  ({ twin, key } = await startPublishedTwin());
  client = publishedClient(twin, key);
});
afterAll(() => twin?.close());

const base = () => `${twin.url}/api/v1/published`;

/** Runs a workflow over its stream to the stream's end; answers the execution id and the last event's id. */
async function streamedRun(workflowId: string, body: unknown): Promise<{ executionId: string; lastId: number; lastStatus: string }> {
  const stream = await openSse(`${base()}/workflows/${workflowId}/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body,
  });
  await stream.ended;
  const last = stream.events.at(-1)!;
  return { executionId: stream.events[0]!.data.execution_id as string, lastId: last.id!, lastStatus: last.data.status as string };
}

interface Exchange {
  /** The `Last-Event-ID` the client sent (none on its first connection). */
  lastEventId: string | undefined;
  status: number;
  contentType: string | null;
}

/**
 * An `eventsource` EventSource on `url` with the key (its `fetch` option, the package's way to add headers),
 * recording each request it makes and each named event it dispatches.
 */
function subscribe(url: string, eventTypes: string[]) {
  const exchanges: Exchange[] = [];
  const events: { type: string; id: string; data: any }[] = [];
  const listeners = new Set<() => void>();
  const changed = () => listeners.forEach((listener) => listener());
  const source = new EventSource(url, {
    fetch: async (input, init) => {
      const response = await documentedFetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${key}` } });
      exchanges.push({
        lastEventId: init.headers['Last-Event-ID'],
        status: response.status,
        contentType: response.headers.get('content-type'),
      });
      changed();
      return response;
    },
  });
  for (const type of eventTypes) {
    source.addEventListener(type, (event) => {
      events.push({ type, id: event.lastEventId, data: JSON.parse(event.data as string) });
      changed();
    });
  }
  source.addEventListener('error', changed);
  /**
   * Resolves once the client has closed for good (readyState CLOSED after an error event), or once it has made
   * more than `maxRequests` requests: a reconnect it should never have made ends the wait at once.
   */
  const settled = (maxRequests: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (source.readyState === EventSource.CLOSED || exchanges.length > maxRequests) {
          listeners.delete(check);
          source.close();
          resolve();
        }
      };
      listeners.add(check);
      check();
    });
  /** Resolves when `match` holds of the events so far. */
  const seen = (match: (seenEvents: typeof events) => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!match(events)) return;
        listeners.delete(check);
        resolve();
      };
      listeners.add(check);
      check();
    });
  return { source, exchanges, events, settled, seen };
}

describe('a client that already has the last event of an ended run', () => {
  it('gets 204 with no body and no event-stream type from /stream, by Last-Event-ID or ?after=', async () => {
    const { executionId, lastId } = await streamedRun('echo', { user_id: 'u', input: { message: 'done' } });
    const byHeader = await http(`${base()}/executions/${executionId}/stream`, {
      headers: { authorization: `Bearer ${key}`, 'last-event-id': String(lastId) },
    });
    const byQuery = await http(`${base()}/executions/${executionId}/stream?after=${lastId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    for (const answer of [byHeader, byQuery]) {
      expect(answer.status).toBe(204);
      expect(answer.text).toBe('');
      expect(answer.headers['content-type']).toBeUndefined();
    }
    // One event earlier there is still something to send.
    const before = await http(`${base()}/executions/${executionId}/stream?after=${lastId - 1}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(before.status).toBe(200);
    expect(before.headers['content-type']).toBe('text/event-stream');
  });

  it('gets 204 from /events too, for a failed run as for a completed one', async () => {
    const completed = await streamedRun('echo', { user_id: 'u', input: { message: 'fine' } });
    const failed = await streamedRun('router', { user_id: 'u', input: { kind: 'broken', message: 'gears' } });
    expect([completed.lastStatus, failed.lastStatus]).toEqual(['completed', 'failed']);
    for (const run of [completed, failed]) {
      const answer = await http(`${base()}/executions/${run.executionId}/events`, {
        headers: { authorization: `Bearer ${key}`, 'last-event-id': String(run.lastId) },
      });
      expect(answer.status, run.lastStatus).toBe(204);
      expect(answer.text).toBe('');
    }
  });

  it("still gets a stream after an approval's complete: the execution is paused, not ended", async () => {
    const { executionId, lastId, lastStatus } = await streamedRun('support-bot', { user_id: 'u', input: { message: 'pause here' } });
    expect(lastStatus).toBe('interrupted');
    const resumed = await openSse(`${base()}/executions/${executionId}/stream`, {
      headers: { authorization: `Bearer ${key}`, 'last-event-id': String(lastId) },
    });
    expect(resumed.status).toBe(200);
    expect(resumed.headers['content-type']).toBe('text/event-stream');
    expect((await client.approve(executionId, { feedback: 'go on' })).status).toBe(200);
    await resumed.ended;
    expect(resumed.events.at(-1)!.data).toMatchObject({ status: 'completed' });
  });
});

describe('the eventsource package', () => {
  it("stops after a replayed run's complete: one reconnect with its last id, answered 204, then closed", async () => {
    const { executionId, lastId } = await streamedRun('echo', { user_id: 'u', input: { message: 'replay me' } });
    const subscription = subscribe(`${base()}/executions/${executionId}/stream`, ['start', 'node_update', 'token', 'complete']);
    await subscription.settled(2);

    expect(subscription.events.at(-1)).toMatchObject({
      type: 'complete',
      id: String(lastId),
      data: { status: 'completed', output: 'Echo: replay me' },
    });
    expect(subscription.exchanges).toEqual([
      { lastEventId: undefined, status: 200, contentType: 'text/event-stream' },
      { lastEventId: String(lastId), status: 204, contentType: null },
    ]);
    expect(subscription.source.readyState).toBe(EventSource.CLOSED);
  });

  it('stops on /events after the one status of a finished run', async () => {
    const { executionId, lastId } = await streamedRun('echo', { user_id: 'u', input: { message: 'already done' } });
    const subscription = subscribe(`${base()}/executions/${executionId}/events`, ['status', 'decision']);
    await subscription.settled(2);

    expect(subscription.events).toEqual([{ type: 'status', id: String(lastId), data: expect.objectContaining({ status: 'completed' }) }]);
    expect(subscription.exchanges.map((exchange) => [exchange.lastEventId, exchange.status])).toEqual([
      [undefined, 200],
      [String(lastId), 204],
    ]);
    expect(subscription.source.readyState).toBe(EventSource.CLOSED);
  });

  it('follows an execution through its approval, reconnecting after the pause, and stops only at the final complete', async () => {
    const { executionId } = await streamedRun('support-bot', { user_id: 'u', input: { message: 'ship it' } });
    const subscription = subscribe(`${base()}/executions/${executionId}/stream`, ['start', 'node_update', 'complete']);
    await subscription.seen((events) => events.some((event) => event.type === 'complete' && event.data.status === 'interrupted'));
    const paused = subscription.events.at(-1)!;
    expect((await client.approve(executionId, { feedback: 'go' })).status).toBe(200);
    await subscription.settled(3);

    const final = subscription.events.at(-1)!;
    expect(final).toMatchObject({ type: 'complete', data: { status: 'completed', output: 'You said: ship it' } });
    expect(subscription.exchanges.map((exchange) => [exchange.lastEventId, exchange.status])).toEqual([
      [undefined, 200],
      [paused.id, 200],
      [final.id, 204],
    ]);
    expect(subscription.source.readyState).toBe(EventSource.CLOSED);
  });
});
