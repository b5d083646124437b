import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeRequestSchema } from '#executions/execute-request.ts';
import { requestFingerprint } from '#executions/request-fingerprint.ts';
import { executionArnOf } from '#shared/execution-arn.ts';
import { http } from '../support/http.ts';
import { startPublishedTwin, storedRunsOf } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';
import { openSse, tokensOf, type SseEvent, type SseStream } from '../support/sse.ts';

/**
 * Idempotent starts on the twin: a request sent again with its `Idempotency-Key` (a retried execute whose answer was
 * lost, fetch-event-source retrying a dropped POST stream with Last-Event-ID) is the same execution, never a second one.
 * Every test uses its own user, and counts the runs stored for that user.
 */
let twin: TestTwin;
let apiKey: string;
beforeAll(async () => {
  ({ twin, key: apiKey } = await startPublishedTwin());
});
afterAll(() => twin?.close());

const base = () => `${twin.url}/api/v1/published`;
const headersWith = (key?: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${apiKey}`,
  ...(key === undefined ? {} : { 'idempotency-key': key }),
  ...extra,
});

const execute = (workflowId: string, body: unknown, key?: string) =>
  http(`${base()}/workflows/${workflowId}/execute`, { method: 'POST', headers: headersWith(key), body: JSON.stringify(body) });

const stream = (workflowId: string, body: unknown, key?: string, extra: Record<string, string> = {}): Promise<SseStream> =>
  openSse(`${base()}/workflows/${workflowId}/stream`, { method: 'POST', headers: headersWith(key, extra), body });

const SLOW_REPLY = 'one two three four five six seven eight nine ten eleven twelve';
/** The echo workflow generating slowly, so a stream can be dropped in the middle of the execution. */
const slowEcho = (userId: string) => ({
  user_id: userId,
  input: { message: 'hi' },
  overrides: { answer: { reply: SLOW_REPLY, token_delay_ms: 40 } },
});

const ids = (events: SseEvent[]) => events.map((event) => event.id);
const consecutiveFrom = (from: number, count: number) => Array.from({ length: count }, (_, index) => from + index);

describe('POST /workflows/{id}/execute with an Idempotency-Key', () => {
  it('answers a retry with the same execution and result, and starts one execution', async () => {
    const body = { user_id: 'retry-execute', input: { message: 'hello' } };
    const first = await execute('echo', body, 'execute-retry-1');
    const retried = await execute('echo', body, 'execute-retry-1');

    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'completed', output: 'Echo: hello' });
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual(first.body);
    expect(retried.headers['x-execution-id']).toBe(first.body.execution_id);
    expect(await storedRunsOf(twin, 'retry-execute')).toEqual([first.body.execution_id]);
  });

  it('names the execution in its headers, with a key or without', async () => {
    for (const key of ['execute-headers-1', undefined]) {
      const response = await execute('echo', { user_id: 'headers', input: { message: 'x' } }, key);
      expect(response.status).toBe(200);
      expect(response.headers['x-execution-id']).toBe(response.body.execution_id);
      expect(response.headers['content-location']).toBe(`${base()}/executions/${response.body.execution_id}`);
    }
  });

  it('refuses the same key with a different body or workflow with 422 naming Idempotency-Key, starting nothing more', async () => {
    const body = { user_id: 'different-body', input: { message: 'first' } };
    const first = await execute('echo', body, 'execute-422');
    const otherBody = await execute('echo', { ...body, input: { message: 'second' } }, 'execute-422');
    const otherWorkflow = await execute('router', body, 'execute-422');

    for (const refused of [otherBody, otherWorkflow]) {
      expect(refused.status).toBe(422);
      expect(refused.headers['content-type']).toBe('application/json');
      expect(refused.body).toEqual({
        detail: expect.stringMatching(/^Idempotency-Key: was used in the last 24 hours for a different request/),
      });
      expect(refused.headers['x-execution-id']).toBeUndefined();
    }
    expect(await storedRunsOf(twin, 'different-body')).toEqual([first.body.execution_id]);
  });

  it('starts one execution for five concurrent first calls with one key, and answers each with it', async () => {
    const body = { user_id: 'concurrent', input: { message: 'at once' } };
    const answers = await Promise.all(Array.from({ length: 5 }, () => execute('echo', body, 'execute-concurrent')));

    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    const runs = await storedRunsOf(twin, 'concurrent');
    expect(runs).toHaveLength(1);
    expect(answers.map((answer) => answer.body.execution_id)).toEqual(Array(5).fill(runs[0]));
    expect(answers.map((answer) => answer.body.output)).toEqual(Array(5).fill('Echo: at once'));
  });

  it('waits for the execution a retry joins while it is still going, as the first call would, and answers its result', async () => {
    const body = slowEcho('join-running');
    const streamed = await stream('echo', body, 'execute-join-running');
    await streamed.waitFor((event) => event.event === 'token');

    const joined = await execute('echo', body, 'execute-join-running');

    expect(joined.status).toBe(200);
    expect(joined.body).toMatchObject({ execution_id: streamed.headers['x-execution-id'], status: 'completed', output: SLOW_REPLY });
    expect(joined.body).not.toHaveProperty('poll_url');
    await streamed.ended;
    expect(await storedRunsOf(twin, 'join-running')).toEqual([joined.body.execution_id]);
  });

  it('refuses a key of 256 characters or with non-ASCII characters with 400, on execute and stream, before any run', async () => {
    const body = { user_id: 'bad-key', input: { message: 'x' } };
    // The header's bytes as a client sends UTF-8: Node writes a string's code units below 256 as single bytes.
    const nonAscii = Buffer.from('ключ', 'utf8').toString('latin1');
    for (const key of ['k'.repeat(256), nonAscii, 'clé']) {
      const refused = await execute('echo', body, key);
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ detail: 'Validation error: Idempotency-Key: must be 1 to 255 printable ASCII characters' });
      const refusedStream = await stream('echo', body, key);
      await refusedStream.ended;
      expect(refusedStream.status).toBe(400);
      expect(JSON.parse(refusedStream.text)).toEqual({
        detail: 'Validation error: Idempotency-Key: must be 1 to 255 printable ASCII characters',
      });
    }
    expect(await storedRunsOf(twin, 'bad-key')).toEqual([]);
  });
});

describe('POST /workflows/{id}/stream with an Idempotency-Key', () => {
  it('names the execution in the headers, before the first event', async () => {
    const opened = await stream('echo', slowEcho('stream-headers'), 'stream-headers-1');
    // The status line and headers arrive with the stream's opening comment, before any event of the execution.
    const executionId = opened.headers['x-execution-id'] as string;
    expect(opened.status).toBe(200);
    expect(executionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(opened.headers['content-location']).toBe(`${base()}/executions/${executionId}/stream`);
    await opened.ended;
    expect(opened.events[0]).toMatchObject({ id: 1, event: 'start', data: { execution_id: executionId } });
  });

  it('joins the same execution when retried with Last-Event-ID, and sends only the events after that id', async () => {
    const body = slowEcho('stream-retry');
    const dropped = await stream('echo', body, 'stream-retry-1');
    await dropped.waitFor((event) => event.id === 3);
    const executionId = dropped.headers['x-execution-id'] as string;
    dropped.close();

    const retried = await stream('echo', body, 'stream-retry-1', { 'last-event-id': '3' });
    await retried.ended;

    expect(retried.status).toBe(200);
    expect(retried.headers['x-execution-id']).toBe(executionId);
    expect(ids(retried.events)).toEqual(consecutiveFrom(4, retried.events.length));
    expect(retried.events.at(-1)).toMatchObject({
      event: 'complete',
      data: { execution_id: executionId, status: 'completed', output: SLOW_REPLY },
    });
    expect(await storedRunsOf(twin, 'stream-retry')).toEqual([executionId]);
  });

  it('joins from the first event when retried without Last-Event-ID, and is the execution an execute with the same key answers', async () => {
    const body = { user_id: 'stream-then-execute', input: { message: 'both ways' } };
    const first = await stream('echo', body, 'stream-execute-1');
    await first.ended;
    const executionId = first.headers['x-execution-id'] as string;

    const again = await stream('echo', body, 'stream-execute-1');
    await again.ended;
    const executed = await execute('echo', body, 'stream-execute-1');

    expect(again.events).toEqual(first.events);
    expect(tokensOf(again.events, 'answer')).toBe('Echo: both ways');
    expect(executed.body).toMatchObject({ execution_id: executionId, status: 'completed', output: 'Echo: both ways' });
    expect(await storedRunsOf(twin, 'stream-then-execute')).toEqual([executionId]);
  });

  it('answers 204 to a retry that already has the last event, as the GET stream does, and refuses an id the execution never gave out', async () => {
    const body = { user_id: 'stream-end', input: { message: 'short' } };
    const first = await stream('echo', body, 'stream-end-1');
    await first.ended;
    const lastId = first.events.at(-1)!.id!;
    const executionId = first.headers['x-execution-id'] as string;

    const nothingMore = await http(`${base()}/workflows/echo/stream`, {
      method: 'POST',
      headers: headersWith('stream-end-1', { 'last-event-id': String(lastId) }),
      body: JSON.stringify(body),
    });
    const byGet = await http(`${base()}/executions/${executionId}/stream`, {
      headers: headersWith(undefined, { 'last-event-id': String(lastId) }),
    });
    const pastTheEnd = await stream('echo', body, 'stream-end-1', { 'last-event-id': String(lastId + 5) });
    await pastTheEnd.ended;

    for (const answer of [nothingMore, byGet]) {
      expect(answer.status).toBe(204);
      expect(answer.text).toBe('');
      expect(answer.headers['content-type']).toBeUndefined();
    }
    expect(nothingMore.headers['x-execution-id']).toBe(executionId);
    expect(nothingMore.headers['content-location']).toBe(`${base()}/executions/${executionId}/stream`);
    expect(pastTheEnd.status).toBe(400);
    expect(JSON.parse(pastTheEnd.text)).toEqual({
      detail: `Validation error: Last-Event-ID: is ${lastId + 5}, but the last event of this execution is ${lastId}`,
    });
    expect(await storedRunsOf(twin, 'stream-end')).toHaveLength(1);
  });
});

/**
 * A first request that dies on the way (its function times out or is killed) leaves its key as it was at that moment.
 * These tests put a key in the state such a request leaves, its lease on the start passed, and retry.
 */
describe('a retry after the first request died before marking its key started', () => {
  const PROJECT = 'default';
  const keyItem = (key: string) => ({ pk: `idempotency#${PROJECT}#${key}` });
  const readKey = async (key: string) =>
    (await twin.dynamo.send(new GetCommand({ TableName: twin.twin.tables.executions, Key: keyItem(key), ConsistentRead: true }))).Item;
  const rewriteKey = (key: string, item: Record<string, unknown>) =>
    twin.dynamo.send(new PutCommand({ TableName: twin.twin.tables.executions, Item: { ...keyItem(key), ...item } }));
  const startInputOf = (executionId: string) =>
    twin.stepFunctions.describeExecution(executionArnOf(twin.twin.state_machine_arn, executionId)).input;

  it('joins the execution a first request started when it died after StartExecution, on execute and on stream', async () => {
    const body = { user_id: 'died-after-start', input: { message: 'once' } };
    const first = await execute('echo', body, 'died-after-start');
    const executionId = first.body.execution_id as string;
    // What the first request left: every item written, StartExecution sent, the key never marked started.
    const { state: _state, ...item } = (await readKey('died-after-start'))!;
    await rewriteKey('died-after-start', {
      ...item,
      state: 'launching',
      start_input: startInputOf(executionId),
      lease_id: 'lease-of-the-dead-request',
      starting_until_ms: Date.now() - 1,
    });

    const retried = await execute('echo', body, 'died-after-start');
    const streamed = await stream('echo', body, 'died-after-start');
    await streamed.ended;

    expect(retried.status).toBe(200);
    expect(retried.headers['x-execution-id']).toBe(executionId);
    expect(retried.body).toEqual(first.body);
    expect(streamed.headers['x-execution-id']).toBe(executionId);
    expect(streamed.events.at(-1)).toMatchObject({ event: 'complete', data: { execution_id: executionId, status: 'completed' } });
    expect(await storedRunsOf(twin, 'died-after-start')).toEqual([executionId]);
    expect(await readKey('died-after-start')).toMatchObject({ execution_id: executionId, state: 'started' });
    expect(await readKey('died-after-start')).not.toHaveProperty('start_input');
  });

  it('joins the execution a key of the previous release names when it was left starting after its execution began', async () => {
    const body = { user_id: 'left-starting', input: { message: 'once' } };
    const first = await execute('echo', body, 'left-starting');
    const executionId = first.body.execution_id as string;
    // The previous release had no `launching`: it left `starting`, its thread and creation time unrecorded.
    const { state: _state, thread_id: _thread, created_at_ms: _created, ...item } = (await readKey('left-starting'))!;
    await rewriteKey('left-starting', { ...item, state: 'starting', starting_until_ms: Date.now() - 1 });

    const retried = await execute('echo', body, 'left-starting');

    expect(retried.status).toBe(200);
    expect(retried.body).toEqual(first.body);
    expect(await storedRunsOf(twin, 'left-starting')).toEqual([executionId]);
  });

  it('starts the execution a first request reserved but never started, under the execution, thread and time its key names', async () => {
    const body = { user_id: 'died-before-start', input: { message: 'late but once' } };
    const parsed = executeRequestSchema.safeParse(body);
    if (!parsed.success) throw parsed.error;
    const executionId = randomUUID();
    const createdAtMs = Date.now() - 60_000;
    // What a first request that died right after reserving its key left: the key, nothing else.
    await rewriteKey('died-before-start', {
      execution_id: executionId,
      request_sha256: requestFingerprint('echo', parsed.data),
      state: 'starting',
      lease_id: 'lease-of-the-dead-request',
      starting_until_ms: Date.now() - 1,
      thread_id: 'thread-of-the-dead-request',
      created_at_ms: createdAtMs,
      expires_at: Math.floor(Date.now() / 1000) + 3600,
    });

    const retried = await execute('echo', body, 'died-before-start');
    const again = await execute('echo', body, 'died-before-start');

    expect(retried.status).toBe(200);
    expect(retried.headers['x-execution-id']).toBe(executionId);
    expect(retried.body).toMatchObject({
      execution_id: executionId,
      thread_id: 'thread-of-the-dead-request',
      status: 'completed',
      output: 'Echo: late but once',
      created_at: new Date(createdAtMs).toISOString(),
    });
    expect(again.body).toEqual(retried.body);
    expect(await storedRunsOf(twin, 'died-before-start')).toEqual([executionId]);
  });
});
