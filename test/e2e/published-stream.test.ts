import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, pollExecution, publishedClient, publishFixtures, startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';
import { openSse, tokensOf, type SseEvent, type SseStream } from '../support/sse.ts';

let twin: TestTwin;
let key: string;
let client: ReturnType<typeof publishedClient>;
beforeAll(async () => {
  ({ twin, key } = await startPublishedTwin());
  client = publishedClient(twin, key);
});
afterAll(() => twin?.close());

const base = () => `${twin.url}/api/v1/published`;
const auth = (value = key) => ({ authorization: `Bearer ${value}` });

function streamRun(workflowId: string, body: unknown, headers: Record<string, string> = auth()): Promise<SseStream> {
  return openSse(`${base()}/workflows/${workflowId}/stream`, { method: 'POST', headers, body });
}

function followRun(
  executionId: string,
  options: { path?: 'stream' | 'events'; query?: string; headers?: Record<string, string> } = {},
): Promise<SseStream> {
  const query = options.query ? `?${options.query}` : '';
  return openSse(`${base()}/executions/${executionId}/${options.path ?? 'stream'}${query}`, { headers: { ...auth(), ...options.headers } });
}

const SLOW_REPLY = 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen';
/** The echo workflow made to generate slowly, so a test can act in the middle of it. */
const slowEcho = (delayMs = 40) => ({
  user_id: 'u',
  input: { message: 'hi' },
  overrides: { answer: { reply: SLOW_REPLY, token_delay_ms: delayMs } },
});

const ids = (events: SseEvent[]) => events.map((event) => event.id);
const names = (events: SseEvent[]) => events.map((event) => event.event);

/** Every event id from 1 up, without a gap or a repeat. */
function expectGapFree(events: SseEvent[], from = 1) {
  expect(ids(events)).toEqual(events.map((_, index) => from + index));
}

describe('POST /workflows/{id}/stream', () => {
  it('answers an event stream: headers, start, node updates, tokens equal to the output, complete', async () => {
    const stream = await streamRun('echo', { user_id: 'u', thread_id: 't-1', input: { message: 'hello big world' } });
    await stream.ended;

    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream');
    expect(stream.headers['cache-control']).toBe('no-cache');
    expect(stream.headers['x-accel-buffering']).toBe('no');
    expect(stream.headers.connection).toBe('keep-alive');

    const { events } = stream;
    expectGapFree(events);
    const start = events[0]!;
    expect(start.event).toBe('start');
    expect(start.data).toEqual({ execution_id: expect.any(String), thread_id: 't-1', workflow_id: 'echo' });
    const executionId = start.data.execution_id as string;
    expect(names(events)).toEqual(['start', 'node_update', ...Array(4).fill('token'), 'node_update', 'node_update', 'complete']);
    expect(events[1]!.data).toEqual({ node_id: 'answer', type: 'llm', status: 'started' });
    expect(tokensOf(events, 'answer')).toBe('Echo: hello big world');
    const usage = { model_calls: 1, input_tokens: 0, output_tokens: 4, tool_calls: 0, images: 0 };
    expect(events.at(-1)!.data).toEqual({ output: 'Echo: hello big world', execution_id: executionId, status: 'completed', usage });

    // The stream tells what a poll tells.
    const polled = await client.getExecution(executionId);
    expect(polled.body).toMatchObject({ status: 'completed', output: 'Echo: hello big world' });
  });

  it('sends a structured output as the object it is', async () => {
    const stream = await streamRun('memory', { user_id: 'structured', input: { topic: 'tea' } });
    await stream.ended;
    const complete = stream.events.at(-1)!;
    expect(complete.event).toBe('complete');
    expect(complete.data.status).toBe('completed');
    expect(complete.data.output).toEqual({ reply: expect.stringContaining('Hello'), topic: 'tea' });
    expect(
      stream.events.find((event) => event.event === 'node_update' && event.data.node_id === 'route' && event.data.status === 'completed')!
        .data,
    ).toEqual({ node_id: 'route', type: 'condition', status: 'completed', next: 'remember' });
  });

  it('ends with complete interrupted at an approval, and the approval can be answered at once', async () => {
    const stream = await streamRun('support-bot', { user_id: 'u', input: { message: 'refund' } });
    await stream.ended;
    const complete = stream.events.at(-1)!;
    expect(complete.event).toBe('complete');
    expect(complete.data).toEqual({
      output: null,
      execution_id: expect.any(String),
      status: 'interrupted',
      pending_approval: { approval_id: expect.stringMatching(/^apr_/), node_id: 'confirm', message: 'Send You said: refund?' },
      // Counted up to the pause (the llm node's call), from the record AwaitApproval read.
      usage: { model_calls: 1, input_tokens: 0, output_tokens: 3, tool_calls: 0, images: 0 },
    });
    expect(stream.events.at(-2)!.data).toEqual({
      node_id: 'confirm',
      type: 'approval',
      status: 'waiting',
      approval_id: complete.data.pending_approval.approval_id,
    });
    const approved = await client.approve(complete.data.execution_id, { feedback: 'ok' });
    expect(approved.status).toBe(200);
  });

  it('sends error, then complete failed, for a failing run', async () => {
    const stream = await streamRun('router', { user_id: 'u', input: { kind: 'broken', message: 'gears' } });
    await stream.ended;
    expect(names(stream.events).slice(-2)).toEqual(['error', 'complete']);
    expect(stream.events.at(-2)!.data).toEqual({ message: 'Broken: gears' });
    expect(stream.events.at(-1)!.data).toMatchObject({ status: 'failed', output: null, error: 'Broken: gears' });
  });

  it('ends with complete cancelled when the execution is stopped while streaming', async () => {
    // Tokens 2 s apart: the stop lands mid-reply however slow the machine (the whole reply would take 30 s).
    const stream = await streamRun('echo', slowEcho(2_000));
    const firstToken = await stream.waitFor((event) => event.event === 'token');
    const executionId = stream.events[0]!.data.execution_id as string;
    expect(firstToken.data.node_id).toBe('answer');
    const stopped = await client.stop(executionId);
    expect(stopped.body).toEqual({ execution_id: executionId, status: 'cancelled' });
    await stream.ended;

    expectGapFree(stream.events);
    expect(stream.events.at(-1)!).toMatchObject({
      event: 'complete',
      data: { execution_id: executionId, status: 'cancelled', output: null },
    });
    expect(tokensOf(stream.events, 'answer').length).toBeLessThan(SLOW_REPLY.length);
  });

  it('lets the execution finish after the client drops the stream, and a replay shows all of it', async () => {
    const stream = await streamRun('echo', slowEcho(20));
    await stream.waitFor((event) => event.event === 'token');
    const executionId = stream.events[0]!.data.execution_id as string;
    stream.close();

    const finished = await pollExecution(client, executionId, (body) => body.status === 'completed', 15_000);
    expect(finished.output).toBe(SLOW_REPLY);
    const replay = await followRun(executionId);
    await replay.ended;
    expectGapFree(replay.events);
    expect(tokensOf(replay.events, 'answer')).toBe(SLOW_REPLY);
    expect(replay.events.at(-1)!.data).toMatchObject({ status: 'completed', output: SLOW_REPLY });
  });

  it('refuses before streaming with the JSON errors of execute', async () => {
    const readOnly = (await createKey(twin, 'read')).key;
    const noKey = await streamRun('echo', { user_id: 'u' }, {});
    const wrongScope = await streamRun('echo', { user_id: 'u' }, auth(readOnly));
    const unknown = await streamRun('nope', { user_id: 'u' });
    const invalid = await streamRun('echo', { input: 'x' });
    for (const refused of [noKey, wrongScope, unknown, invalid]) await refused.ended;

    expect([noKey.status, wrongScope.status, unknown.status, invalid.status]).toEqual([401, 403, 404, 400]);
    expect(unknown.headers['content-type']).toBe('application/json');
    expect(JSON.parse(unknown.text)).toEqual({ detail: 'Workflow nope not found' });
    expect(JSON.parse(invalid.text).detail).toMatch(/^Validation error: input: must be a JSON object; user_id: /);
    expect(wrongScope.events).toEqual([]);
  });
});

describe('GET /executions/{id}/stream: replay and resume', () => {
  it('replays a finished run with the same ids and events as its live stream', async () => {
    const live = await streamRun('echo', { user_id: 'u', input: { message: 'same every time' } });
    await live.ended;
    const executionId = live.events[0]!.data.execution_id as string;
    const replay = await followRun(executionId);
    await replay.ended;
    expect(replay.events).toEqual(live.events);
  });

  it('resumes exactly after Last-Event-ID mid-stream, and after ?after=, with nothing lost or repeated', async () => {
    const live = await streamRun('echo', slowEcho(30));
    await live.waitFor((event) => event.event === 'token' && event.id! >= 4);
    const executionId = live.events[0]!.data.execution_id as string;
    const seen = live.events.filter((event) => event.id! <= 4);
    live.close();

    const resumed = await followRun(executionId, { headers: { 'last-event-id': '4' } });
    await resumed.ended;
    expectGapFree(resumed.events, 5);
    const whole = [...seen, ...resumed.events];
    expectGapFree(whole);
    expect(tokensOf(whole, 'answer')).toBe(SLOW_REPLY);

    const viaQuery = await followRun(executionId, { query: 'after=6' });
    await viaQuery.ended;
    expect(viaQuery.events).toEqual(resumed.events.slice(2));
    // The header wins over the URL's own ?after= (EventSource reconnects to the same URL with a newer id).
    const both = await followRun(executionId, { query: 'after=2', headers: { 'last-event-id': '6' } });
    await both.ended;
    expect(both.events).toEqual(viaQuery.events);
    // After the last event of an ended run there is nothing more: 204, which stops EventSource from reconnecting.
    const atEnd = await followRun(executionId, { headers: { 'last-event-id': String(whole.at(-1)!.id) } });
    await atEnd.ended;
    expect(atEnd.status).toBe(204);
    expect(atEnd.events).toEqual([]);
  });

  it('refuses a resume id the execution never gave out, and a malformed one, with 400', async () => {
    const live = await streamRun('echo', { user_id: 'u', input: { message: 'x' } });
    await live.ended;
    const executionId = live.events[0]!.data.execution_id as string;
    const beyond = await followRun(executionId, { headers: { 'last-event-id': '999' } });
    const malformed = await followRun(executionId, { query: 'after=abc' });
    await Promise.all([beyond.ended, malformed.ended]);
    expect(beyond.status).toBe(400);
    expect(JSON.parse(beyond.text)).toEqual({
      detail: `Validation error: Last-Event-ID: is 999, but the last event of this execution is ${live.events.at(-1)!.id}`,
    });
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.text)).toEqual({ detail: 'Validation error: after: must be an event id: a whole number' });
  });

  it('names the field the resume id came in: the after query parameter, or the Last-Event-ID header, on both routes', async () => {
    const live = await streamRun('echo', { user_id: 'u', input: { message: 'x' } });
    await live.ended;
    const executionId = live.events[0]!.data.execution_id as string;
    const lastId = live.events.at(-1)!.id!;
    for (const path of ['stream', 'events'] as const) {
      const viaQuery = await followRun(executionId, { path, query: 'after=999' });
      const viaHeader = await followRun(executionId, { path, headers: { 'last-event-id': '999' } });
      // The header wins when both are sent, so it is the one named.
      const viaBoth = await followRun(executionId, { path, query: 'after=1', headers: { 'last-event-id': '999' } });
      await Promise.all([viaQuery.ended, viaHeader.ended, viaBoth.ended]);
      expect([viaQuery.status, viaHeader.status, viaBoth.status], path).toEqual([400, 400, 400]);
      expect(JSON.parse(viaQuery.text), path).toEqual({
        detail: `Validation error: after: is 999, but the last event of this execution is ${lastId}`,
      });
      expect(JSON.parse(viaHeader.text), path).toEqual({
        detail: `Validation error: Last-Event-ID: is 999, but the last event of this execution is ${lastId}`,
      });
      expect(JSON.parse(viaBoth.text), path).toEqual(JSON.parse(viaHeader.text));
    }
  });

  it('continues after an approval: the next segment after the interrupted complete, up to the end', async () => {
    const live = await streamRun('support-bot', { user_id: 'u', input: { message: 'ship it' } });
    await live.ended;
    const interrupted = live.events.at(-1)!;
    const executionId = interrupted.data.execution_id as string;
    const next = await followRun(executionId, { headers: { 'last-event-id': String(interrupted.id) } });
    expect((await client.approve(executionId, { feedback: 'go' })).status).toBe(200);
    await next.ended;
    expectGapFree(next.events, interrupted.id! + 1);
    expect(next.events[0]!.data).toMatchObject({ node_id: 'confirm', type: 'approval', status: 'approved', feedback: 'go' });
    expect(next.events.at(-1)!.data).toMatchObject({ status: 'completed', output: 'You said: ship it' });
  });

  it("answers another project's run and an unknown run 404, and needs workflows.stream", async () => {
    await publishFixtures(twin, 'other-stream');
    const theirs = (await createKey(twin, 'full', { project: 'other-stream' })).key;
    const live = await streamRun('echo', { user_id: 'u', input: { message: 'mine' } });
    await live.ended;
    const executionId = live.events[0]!.data.execution_id as string;
    const fromOther = await followRun(executionId, { headers: auth(theirs) });
    const unknown = await followRun('00000000-0000-0000-0000-000000000000');
    const subscribeOnly = (await createKey(twin, ['events.subscribe'])).key;
    const noScope = await followRun(executionId, { headers: auth(subscribeOnly) });
    await Promise.all([fromOther.ended, unknown.ended, noScope.ended]);
    expect([fromOther.status, unknown.status, noScope.status]).toEqual([404, 404, 403]);
    expect(JSON.parse(fromOther.text)).toEqual(JSON.parse(unknown.text.replace('00000000-0000-0000-0000-000000000000', executionId)));
  });
});

describe('GET /executions/{id}/events', () => {
  it('sends the current state of a finished run and closes', async () => {
    const live = await streamRun('echo', { user_id: 'u', thread_id: 'th', input: { message: 'done already' } });
    await live.ended;
    const executionId = live.events[0]!.data.execution_id as string;
    const subscription = await followRun(executionId, { path: 'events' });
    await subscription.ended;
    expect(subscription.events).toEqual([
      {
        id: live.events.at(-1)!.id,
        event: 'status',
        data: {
          execution_id: executionId,
          workflow_id: 'echo',
          thread_id: 'th',
          status: 'completed',
          output: 'Echo: done already',
          error: null,
          pending_approval: null,
        },
      },
    ]);
  });

  it('follows a waiting run through its approval to the end', async () => {
    const live = await streamRun('support-bot', { user_id: 'u', input: { message: 'wait for me' } });
    await live.ended;
    const executionId = live.events[0]!.data.execution_id as string;
    const subscription = await followRun(executionId, { path: 'events' });
    const first = await subscription.waitFor(() => true);
    expect(first).toMatchObject({ event: 'status', data: { status: 'interrupted', pending_approval: { node_id: 'confirm' } } });
    expect((await client.reject(executionId, { feedback: 'not now' })).status).toBe(200);
    await subscription.ended;
    expect(names(subscription.events)).toEqual(['status', 'decision', 'status']);
    expect(subscription.events[1]!.data).toMatchObject({
      execution_id: executionId,
      node_id: 'confirm',
      decision: 'rejected',
      feedback: 'not now',
      status: 'running',
    });
    expect(subscription.events[2]!.data).toMatchObject({ status: 'completed', output: 'Cancelled: not now', pending_approval: null });
  });

  it('follows a running run to its final state, and resumes after a Last-Event-ID', async () => {
    const live = await streamRun('echo', slowEcho(30));
    await live.waitFor((event) => event.event === 'token');
    const executionId = live.events[0]!.data.execution_id as string;
    const subscription = await followRun(executionId, { path: 'events' });
    await subscription.ended;
    expect(subscription.events[0]).toMatchObject({ event: 'status', data: { status: 'running' } });
    expect(subscription.events.at(-1)).toMatchObject({ event: 'status', data: { status: 'completed', output: SLOW_REPLY } });
    expect(subscription.events).toHaveLength(2);

    const resumed = await followRun(executionId, { path: 'events', headers: { 'last-event-id': String(subscription.events[0]!.id) } });
    await resumed.ended;
    expect(resumed.events).toEqual([subscription.events[1]]);
  });

  it('serves on after the subscriber goes away, as Lambda does, and ends by itself when the execution does', async () => {
    const live = await streamRun('support-bot', { user_id: 'u', input: { message: 'leave' } });
    await live.ended;
    const executionId = live.events[0]!.data.execution_id as string;
    await twin.settled(['PublishedStreamWorkflow']);
    const subscription = await followRun(executionId, { path: 'events' });
    await subscription.waitFor((event) => event.event === 'status');
    expect(twin.invocationsInFlight('PublishedExecutionEvents')).toBe(1);

    // Lambda does not tell a streaming function that its caller left (published-open-streams.test.ts): it reads on,
    // writing to nobody, until the execution ends or its window does.
    subscription.close();
    expect(twin.invocationsInFlight('PublishedExecutionEvents')).toBe(1);
    expect((await client.getExecution(executionId)).body.status).toBe('interrupted');
    expect((await client.approve(executionId, { feedback: 'fine' })).status).toBe(200);
    await twin.settled(['PublishedExecutionEvents']);
    expect((await pollExecution(client, executionId, (body) => body.status === 'completed')).status).toBe('completed');
  });

  it('needs events.subscribe', async () => {
    const streamOnly = (await createKey(twin, ['workflows.stream'])).key;
    const live = await streamRun('echo', { user_id: 'u' });
    await live.ended;
    const refused = await followRun(live.events[0]!.data.execution_id as string, { path: 'events', headers: auth(streamOnly) });
    await refused.ended;
    expect(refused.status).toBe(403);
  });
});

describe('the event log', () => {
  it('is written in batches: far fewer items than events', async () => {
    const live = await streamRun('echo', slowEcho(5));
    await live.ended;
    const executionId = live.events[0]!.data.execution_id as string;
    const { Items } = await twin.dynamo.send(
      new QueryCommand({
        TableName: twin.twin.tables.streamEvents,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `run#${executionId}` },
      }),
    );
    expect(live.events.length).toBeGreaterThan(16);
    expect(Items!.length).toBeLessThan(8);
    expect(Items![0]).toMatchObject({ first_id: 1, project_id: 'default', final: false });
    expect(Items!.at(-1)).toMatchObject({ final: true });
  });
});
