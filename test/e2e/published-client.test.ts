import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PublishedApiError, resumeRun, RunStreamAbortedError, streamRun, type StreamEvent } from '#lib/client/published-client.ts';
import { startPublishedTwin, storedRunsOf, typedClient } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';
import { documentedFetch } from '../support/fetch.ts';

/**
 * lib/client's `streamRun` against the twin, through a fetch that drops streams part-way: the client resumes with
 * GET /executions/{id}/stream and Last-Event-ID (or a `resume` event's URL), gets every event exactly once, and the
 * start is sent once: one execution. A caller that aborts gets where it stood, and resumes exactly after it.
 */

let twin: TestTwin;
let apiKey: string;
beforeAll(async () => {
  ({ twin, key: apiKey } = await startPublishedTwin());
});
afterAll(() => twin?.close());

const SLOW_REPLY = 'one two three four five six seven eight nine ten eleven twelve';
/** The echo workflow generating slowly, so its stream can be cut in the middle of the execution. */
const slowEcho = (userId: string) => ({
  user_id: userId,
  input: { message: 'hi' },
  overrides: { answer: { reply: SLOW_REPLY, token_delay_ms: 40 } },
});

/** How the n-th event stream answered is cut: after `events` whole events, mid-way through the next (a dropped connection), or ended with a `resume` event. */
interface Cut {
  events: number;
  withResumeEvent?: boolean;
}

/**
 * A fetch that records every request and cuts the event streams it passes on as `cuts` say, the first stream by
 * `cuts[0]`, the second by `cuts[1]`, and so on; later streams pass whole.
 */
function cuttingFetch(cuts: Cut[]) {
  const requests: { method: string; path: string; search: string; lastEventId: string | null }[] = [];
  let streams = 0;
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    requests.push({ method: request.method, path: url.pathname, search: url.search, lastEventId: request.headers.get('last-event-id') });
    const response = await documentedFetch(request);
    if (!response.headers.get('content-type')?.startsWith('text/event-stream') || !response.body) return response;
    const cut = cuts[streams++];
    if (!cut) return response;
    const executionId = response.headers.get('x-execution-id') ?? url.pathname.split('/').at(-2)!;
    return new Response(cutStream(response.body as ReadableStream<Uint8Array>, cut, executionId), {
      status: response.status,
      headers: response.headers,
    });
  };
  return { fetch, requests };
}

function cutStream(body: ReadableStream<Uint8Array>, cut: Cut, executionId: string): ReadableStream<Uint8Array> {
  const upstream = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let text = '';
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await upstream.read();
      if (done) {
        controller.close();
        return;
      }
      text += decoder.decode(value, { stream: true });
      // The start of event `cut.events + 1`: its `id:` line.
      const next = [...text.matchAll(/^id: /gm)][cut.events];
      if (next === undefined) {
        controller.enqueue(encoder.encode(text.slice(sent)));
        sent = text.length;
        return;
      }
      await upstream.cancel();
      if (cut.withResumeEvent) {
        const resume = {
          last_event_id: cut.events,
          resume_url: `/api/v1/published/executions/${executionId}/stream?after=${cut.events}`,
          reason: 'time_limit',
        };
        controller.enqueue(encoder.encode(`${text.slice(sent, next.index)}\nevent: resume\ndata: ${JSON.stringify(resume)}\n\n`));
        controller.close();
      } else {
        controller.enqueue(encoder.encode(text.slice(sent, next.index + 'id: '.length)));
        controller.error(new TypeError('terminated'));
      }
    },
    async cancel() {
      await upstream.cancel();
    },
  });
}

const consecutiveFrom1 = (count: number) => Array.from({ length: count }, (_, index) => index + 1);
const tokens = (events: StreamEvent[]) => events.map((event) => (event.event === 'token' ? event.data.content : '')).join('');

describe('streamRun (lib/client)', () => {
  it('resumes a stream dropped twice with GET and Last-Event-ID: every event once, one POST, one execution', async () => {
    const { fetch, requests } = cuttingFetch([{ events: 3 }, { events: 4 }]);
    const client = typedClient(twin, apiKey, fetch);
    const events: StreamEvent[] = [];

    const result = await streamRun(client, 'echo', slowEcho('client-resume'), { onEvent: (event) => events.push(event), resumeDelayMs: 0 });

    expect(result.complete).toMatchObject({ execution_id: result.executionId, status: 'completed', output: SLOW_REPLY });
    expect(events.map((event) => event.id)).toEqual(consecutiveFrom1(events.length));
    expect(result.lastEventId).toBe(events.length);
    expect(events[0]).toMatchObject({ id: 1, event: 'start', data: { execution_id: result.executionId, workflow_id: 'echo' } });
    expect(events.at(-1)!.event).toBe('complete');
    expect(tokens(events)).toBe(SLOW_REPLY);

    const streamPath = `/api/v1/published/executions/${result.executionId}/stream`;
    expect(requests.filter((request) => request.method === 'POST')).toEqual([
      { method: 'POST', path: '/api/v1/published/workflows/echo/stream', search: '', lastEventId: null },
    ]);
    expect(requests.filter((request) => request.method === 'GET')).toEqual([
      { method: 'GET', path: streamPath, search: '', lastEventId: '3' },
      { method: 'GET', path: streamPath, search: '', lastEventId: '7' },
    ]);
    expect(await storedRunsOf(twin, 'client-resume')).toEqual([result.executionId]);
    const status = await client.GET('/executions/{execution_id}', { params: { path: { execution_id: result.executionId } } });
    expect(status.data).toMatchObject({ execution_id: result.executionId, status: 'completed', output: SLOW_REPLY });
  });

  it('follows a resume event to its URL, with an Idempotency-Key on the start', async () => {
    const { fetch, requests } = cuttingFetch([{ events: 2, withResumeEvent: true }]);
    const client = typedClient(twin, apiKey, fetch);
    const events: StreamEvent[] = [];

    const result = await streamRun(client, 'echo', slowEcho('client-resume-event'), {
      idempotencyKey: 'client-resume-event-1',
      onEvent: (event) => events.push(event),
    });

    expect(result.complete).toMatchObject({ status: 'completed', output: SLOW_REPLY });
    expect(events.map((event) => event.id)).toEqual(consecutiveFrom1(events.length));
    expect(tokens(events)).toBe(SLOW_REPLY);
    expect(requests.map(({ method, path, search }) => `${method} ${path}${search}`)).toEqual([
      'POST /api/v1/published/workflows/echo/stream',
      `GET /api/v1/published/executions/${result.executionId}/stream?after=2`,
    ]);
    expect(requests[1]!.lastEventId).toBe('2');
    expect(await storedRunsOf(twin, 'client-resume-event')).toEqual([result.executionId]);
  });

  it('streams an execution that is never cut in one request', async () => {
    const { fetch, requests } = cuttingFetch([]);
    const events: StreamEvent[] = [];
    const result = await streamRun(
      typedClient(twin, apiKey, fetch),
      'echo',
      { user_id: 'client-whole', input: { message: 'whole' } },
      { onEvent: (event) => events.push(event) },
    );

    expect(result.complete).toMatchObject({ status: 'completed', output: 'Echo: whole' });
    expect(events.map((event) => event.id)).toEqual(consecutiveFrom1(events.length));
    expect(requests).toHaveLength(1);
  });

  it('throws the refusal of a start, with its detail, and sends nothing more', async () => {
    const { fetch, requests } = cuttingFetch([]);
    const refused = streamRun(typedClient(twin, apiKey, fetch), 'nope', { user_id: 'client-refused' }, { onEvent: () => undefined });

    await expect(refused).rejects.toThrow(PublishedApiError);
    await expect(refused).rejects.toMatchObject({ status: 404, detail: 'Workflow nope not found' });
    expect(requests).toHaveLength(1);
    expect(await storedRunsOf(twin, 'client-refused')).toEqual([]);
  });
});

/** Runs `start`, which aborts its own signal after `count` events; answers the events seen and what it threw. */
async function abortAfter(
  count: number,
  start: (options: { signal: AbortSignal; onEvent: (event: StreamEvent) => void }) => Promise<unknown>,
) {
  const controller = new AbortController();
  const events: StreamEvent[] = [];
  const thrown = await start({
    signal: controller.signal,
    onEvent: (event) => {
      events.push(event);
      if (events.length === count) controller.abort();
    },
  }).then(
    () => undefined,
    (error: unknown) => error,
  );
  return { events, thrown };
}

describe('streamRun aborted by its caller, and resumeRun', () => {
  it('throws where the caller stood after two events; resumeRun from there gives every later event once, to the final complete', async () => {
    const { fetch, requests } = cuttingFetch([]);
    const client = typedClient(twin, apiKey, fetch);
    const { events: first, thrown } = await abortAfter(2, (options) => streamRun(client, 'echo', slowEcho('client-abort'), options));

    expect(thrown).toBeInstanceOf(RunStreamAbortedError);
    const aborted = thrown as RunStreamAbortedError;
    expect(aborted.name).toBe('AbortError');
    expect(first.map((event) => event.id)).toEqual([1, 2]);
    expect(aborted.position).toEqual({
      executionId: first[0]!.event === 'start' ? first[0]!.data.execution_id : 'not a start',
      lastEventId: 2,
    });

    const rest: StreamEvent[] = [];
    const result = await resumeRun(client, aborted.position.executionId!, {
      lastEventId: aborted.position.lastEventId,
      onEvent: (event) => rest.push(event),
    });

    const all = [...first, ...rest];
    expect(all.map((event) => event.id)).toEqual(consecutiveFrom1(all.length));
    expect(all.at(-1)).toMatchObject({ event: 'complete', data: { status: 'completed', output: SLOW_REPLY } });
    expect(tokens(all)).toBe(SLOW_REPLY);
    expect(result).toMatchObject({
      executionId: aborted.position.executionId,
      lastEventId: all.length,
      complete: { status: 'completed', output: SLOW_REPLY },
    });
    const streamPath = `/api/v1/published/executions/${result.executionId}/stream`;
    expect(requests.map(({ method, path, lastEventId }) => [method, path, lastEventId])).toEqual([
      ['POST', '/api/v1/published/workflows/echo/stream', null],
      ['GET', streamPath, '2'],
    ]);
    expect(await storedRunsOf(twin, 'client-abort')).toEqual([result.executionId]);
  });

  it('resumes a resumed stream aborted again, from its own position', async () => {
    const client = typedClient(twin, apiKey);
    const first = await abortAfter(2, (options) => streamRun(client, 'echo', slowEcho('client-abort-twice'), options));
    const position = (first.thrown as RunStreamAbortedError).position;
    const second = await abortAfter(3, (options) =>
      resumeRun(client, position.executionId!, { lastEventId: position.lastEventId, ...options }),
    );
    const again = (second.thrown as RunStreamAbortedError).position;
    expect(again).toEqual({ executionId: position.executionId, lastEventId: 5 });

    const rest: StreamEvent[] = [];
    const result = await resumeRun(client, again.executionId!, { lastEventId: again.lastEventId, onEvent: (event) => rest.push(event) });

    const all = [...first.events, ...second.events, ...rest];
    expect(all.map((event) => event.id)).toEqual(consecutiveFrom1(all.length));
    expect(all.at(-1)).toMatchObject({ event: 'complete', data: { status: 'completed' } });
    expect(result.complete).toMatchObject({ status: 'completed', output: SLOW_REPLY });
  });

  it('sent again with its Idempotency-Key and the last event id, streamRun joins the execution after that event instead of from event 1', async () => {
    const { fetch, requests } = cuttingFetch([]);
    const client = typedClient(twin, apiKey, fetch);
    const key = 'client-abort-key-1';
    const first = await abortAfter(2, (options) =>
      streamRun(client, 'echo', slowEcho('client-abort-key'), { idempotencyKey: key, ...options }),
    );
    const position = (first.thrown as RunStreamAbortedError).position;

    const rest: StreamEvent[] = [];
    const result = await streamRun(client, 'echo', slowEcho('client-abort-key'), {
      idempotencyKey: key,
      lastEventId: position.lastEventId,
      onEvent: (event) => rest.push(event),
    });

    const all = [...first.events, ...rest];
    expect(all.map((event) => event.id)).toEqual(consecutiveFrom1(all.length));
    expect(result).toMatchObject({
      executionId: position.executionId,
      lastEventId: all.length,
      complete: { status: 'completed', output: SLOW_REPLY },
    });
    expect(requests.map(({ method, lastEventId }) => [method, lastEventId])).toEqual([
      ['POST', null],
      ['POST', '2'],
    ]);
    expect(await storedRunsOf(twin, 'client-abort-key')).toEqual([result.executionId]);
  });

  it("resumed after the final event, gives the execution's complete back and no event again", async () => {
    const client = typedClient(twin, apiKey);
    const seen: StreamEvent[] = [];
    const finished = await streamRun(
      client,
      'echo',
      { user_id: 'client-after-end', input: { message: 'done' } },
      { idempotencyKey: 'client-after-end-1', onEvent: (event) => seen.push(event) },
    );

    const replayed: StreamEvent[] = [];
    const byGet = await resumeRun(client, finished.executionId, {
      lastEventId: finished.lastEventId,
      onEvent: (event) => replayed.push(event),
    });
    const byPost = await streamRun(
      client,
      'echo',
      { user_id: 'client-after-end', input: { message: 'done' } },
      {
        idempotencyKey: 'client-after-end-1',
        lastEventId: finished.lastEventId,
        onEvent: (event) => replayed.push(event),
      },
    );

    expect(replayed).toEqual([]);
    expect(byGet).toEqual(finished);
    expect(byPost).toEqual(finished);
    expect(finished.complete).toMatchObject({ status: 'completed', output: 'Echo: done' });
    expect(seen.at(-1)).toMatchObject({ id: finished.lastEventId, event: 'complete' });
  });

  it('aborted before the API named the execution, throws no execution id and event 0: the same start with its key is the way back', async () => {
    const client = typedClient(twin, apiKey);
    const controller = new AbortController();
    controller.abort();
    const refused = streamRun(client, 'echo', { user_id: 'client-abort-early' }, { signal: controller.signal, onEvent: () => undefined });

    await expect(refused).rejects.toBeInstanceOf(RunStreamAbortedError);
    await expect(refused).rejects.toMatchObject({ name: 'AbortError', position: { executionId: undefined, lastEventId: 0 } });
  });

  it('refuses a last event id without the Idempotency-Key that names its execution, sending nothing', async () => {
    const { fetch, requests } = cuttingFetch([]);
    const refused = streamRun(
      typedClient(twin, apiKey, fetch),
      'echo',
      { user_id: 'client-no-key' },
      { lastEventId: 3, onEvent: () => undefined },
    );
    await expect(refused).rejects.toThrow(TypeError);
    expect(requests).toEqual([]);
  });
});
