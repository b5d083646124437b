import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';

/**
 * Prism, Stoplight's validating proxy, with `--errors` (a request or answer that breaks the document becomes Prism's
 * own 422 or 500, as CI usually runs it) in front of the twin, on the served OpenAPI 3.1 document: every JSON route,
 * a streamed execution, its resume, the 204 after its last event, the lifecycle stream and the probe pass as the twin
 * sent them. A 3.1 `schema` is the whole body, which for a stream is text (functions/shared/http/openapi-streams.ts);
 * the same proxy on a document whose stream `schema` is one event fails the stream, so the pass is the document's doing.
 */

const PRISM_CLI = createRequire(import.meta.url).resolve('@stoplight/prism-cli/dist/index.js');
const BASE = '/api/v1/published';

let twin: TestTwin;
let key: string;
let dir: string;
const proxies: ChildProcess[] = [];

/** A port free now: Prism takes a port number, not a listening socket. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Prism as a validating proxy to the twin's Published Workflow API, on `document` (a URL or a file); resolves with its
 * base URL once it listens. Prism matches a request's path against the document's paths as they are, and forwards it
 * to the upstream URL with that path appended: the API's base path belongs to the upstream.
 */
async function startPrism(document: string): Promise<string> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [PRISM_CLI, 'proxy', document, `${twin.url}${BASE}`, '--errors', '--port', String(port), '--host', '127.0.0.1'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  proxies.push(child);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Prism is listening')) resolve();
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => reject(new Error(`Prism exited (${code}) before listening:\n${output}`)));
  });
  return `http://127.0.0.1:${port}`;
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

async function call(base: string, method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() };
}

function events(answer: Answer): EventSourceMessage[] {
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => parsed.push(event) });
  parser.feed(answer.text);
  return parsed;
}

/** What Prism answers of its own when a request or an answer breaks the document: problem+json naming the violations. */
const byPrism = (answer: Answer) => answer.contentType.startsWith('application/problem+json');

const echo = (userId: string) => ({ user_id: userId, input: { message: 'hello' } });

beforeAll(async () => {
  ({ twin, key } = await startPublishedTwin());
  dir = mkdtempSync(join(tmpdir(), 'prism-'));
});

afterAll(async () => {
  for (const proxy of proxies) proxy.kill();
  await twin?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('Prism with --errors in front of the twin, on the served 3.1 document', () => {
  let prism: string;
  beforeAll(async () => {
    prism = await startPrism(`${twin.url}${BASE}/openapi-3.1.json`);
  });

  it('passes a streamed execution, its resume after Last-Event-ID, and the 204 after its last event', { timeout: 60_000 }, async () => {
    const streamed = await call(prism, 'POST', '/workflows/echo/stream', { body: echo('prism-stream') });
    const all = events(streamed);
    expect(streamed.status, streamed.text).toBe(200);
    expect(streamed.contentType).toMatch(/^text\/event-stream/);
    expect(all.map((event) => event.event)).toEqual(['start', 'node_update', 'token', 'token', 'node_update', 'node_update', 'complete']);
    const executionId = (JSON.parse(all[0]!.data) as { execution_id: string }).execution_id;

    const resumed = await call(prism, 'GET', `/executions/${executionId}/stream`, { headers: { 'last-event-id': '3' } });
    expect(resumed.status, resumed.text).toBe(200);
    expect(events(resumed)).toEqual(all.slice(3));

    const ended = await call(prism, 'GET', `/executions/${executionId}/stream`, { headers: { 'last-event-id': all.at(-1)!.id! } });
    expect(ended).toMatchObject({ status: 204, text: '' });

    const lifecycle = await call(prism, 'GET', `/executions/${executionId}/events`);
    expect(lifecycle.status, lifecycle.text).toBe(200);
    expect(events(lifecycle).map((event) => [event.event, (JSON.parse(event.data) as { status: string }).status])).toEqual([
      ['status', 'completed'],
    ]);
  });

  // Each route's first call starts its function on the twin: a few hundred milliseconds each, more on a loaded machine.
  it('passes the JSON routes, their refusals, an approval and the stream probe', { timeout: 90_000 }, async () => {
    const list = await call(prism, 'GET', '/workflows');
    expect(list.status, list.text).toBe(200);
    expect((await call(prism, 'GET', '/workflows/echo')).status).toBe(200);
    const missing = await call(prism, 'GET', '/workflows/billing-bot');
    expect([missing.status, byPrism(missing)]).toEqual([404, false]);

    const executed = await call(prism, 'POST', '/workflows/echo/execute', { body: echo('prism-execute') });
    expect(executed.status, executed.text).toBe(200);
    const executionId = (JSON.parse(executed.text) as { execution_id: string }).execution_id;
    expect((await call(prism, 'GET', `/executions/${executionId}`)).status).toBe(200);
    const stopped = await call(prism, 'POST', `/executions/${executionId}/stop`);
    expect([stopped.status, byPrism(stopped)]).toEqual([409, false]);

    // support-bot stops at an approval: the stream ends with `complete` interrupted, the decision resumes it.
    const paused = events(
      await call(prism, 'POST', '/workflows/support-bot/stream', { body: { user_id: 'prism-approve', input: { message: 'refund' } } }),
    );
    const complete = JSON.parse(paused.at(-1)!.data) as { execution_id: string; status: string };
    expect([paused.at(-1)!.event, complete.status]).toEqual(['complete', 'interrupted']);
    const approved = await call(prism, 'POST', `/executions/${complete.execution_id}/approve`, { body: { feedback: 'ok' } });
    expect(approved.status, approved.text).toBe(200);
    const again = await call(prism, 'POST', `/executions/${complete.execution_id}/reject`);
    expect([again.status, byPrism(again)]).toEqual([409, false]);

    const probe = await call(prism, 'GET', '/diagnostics/stream-probe?bytes=16&hold_ms=0');
    expect(probe.status, probe.text).toBe(200);
    expect(events(probe).map((event) => event.event)).toEqual(['end']);

    for (const path of ['/openapi.json', '/openapi-3.1.json', '/docs']) {
      const document = await call(prism, 'GET', path);
      expect([path, document.status, byPrism(document)]).toEqual([path, 200, false]);
    }
  });

  it('validates what it passes: a request that breaks the document is refused by Prism itself', async () => {
    const refused = await call(prism, 'POST', '/workflows/echo/execute', { body: { input: { message: 'no user' } } });

    expect(refused.status).toBe(422);
    expect(byPrism(refused)).toBe(true);
    expect(refused.text).toContain('user_id');
  });
});

describe('Prism on a 3.1 document whose stream schema is one event', () => {
  it('fails the same correct stream: the body it validates is the whole text', async () => {
    const served = (await (await fetch(`${twin.url}${BASE}/openapi-3.1.json`)).json()) as Record<string, any>;
    served.paths['/workflows/{workflow_id}/stream'].post.responses['200'].content['text/event-stream'].schema = {
      $ref: '#/components/schemas/RunStreamEvent',
    };
    const file = join(dir, 'one-event.json');
    writeFileSync(file, JSON.stringify(served));
    const prism = await startPrism(file);

    const streamed = await call(prism, 'POST', '/workflows/echo/stream', { body: echo('prism-one-event') });

    expect(streamed.status).toBe(500);
    expect(byPrism(streamed)).toBe(true);
    expect(streamed.text).toContain('must be object');
  });
});
