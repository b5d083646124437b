import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { expectDocumented, parseEventStream } from '../support/openapi.ts';

/**
 * A reader that stops reading a busy stream. The execution streams about 24 MB of token events, several times what the
 * loopback sockets' kernel buffers take in (about 4 MB here, more on a loaded machine), so the rest can only wait in
 * the execution's log or in the streaming function's memory. The function honours its response stream's backpressure
 * (the twin's stream takes the next chunk only once the client's socket took the last): it stops reading the log,
 * and after the slow-reader bound (30 s on AWS, 3 s here) it ends the stream with
 * `resume`, reason `slow_reader`, which the reader finds at the end once it reads again.
 */
const SLOW_READER_MS = 3_000;
const NODES = 24;
const WORD_BYTES = 10 * 1024;

let twin: TestTwin;
let key: string;
const functionLog: string[] = [];

/**
 * Twenty-four llm nodes, each replying with the input ten times over: 100 tokens of 10 KB each, 1 MB per node, a token every
 * 10 ms, so the log holds batches of about 100 KB, as a generating model's (written every 100 ms) are.
 */
function floodWorkflow() {
  const names = Array.from({ length: NODES }, (_, i) => `say${i}`);
  const reply = '{{input.message}}'.repeat(10);
  const nodes: Record<string, unknown> = Object.fromEntries(
    names.map((name, i) => [name, { type: 'llm', provider: 'scripted', reply, token_delay_ms: 10, next: names[i + 1] ?? 'done' }]),
  );
  nodes.done = { type: 'end', output: 'flooded' };
  return { id: 'flood', name: 'Flood', description: 'About 24 MB of tokens', start: names[0], nodes };
}

beforeAll(async () => {
  process.env.STREAM_SLOW_READER_MS = String(SLOW_READER_MS);
  // The function's warning is what tells the test the stream gave up on its reader (the suite's level is SILENT).
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
  try {
    twin = await startTestTwin({ onFunctionLog: (name, line) => name === 'PublishedStreamExecution' && functionLog.push(line) });
  } finally {
    delete process.env.STREAM_SLOW_READER_MS;
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
  }
  const dir = mkdtempSync(join(tmpdir(), 'flood-'));
  writeFileSync(join(dir, 'flood.json'), JSON.stringify(floodWorkflow()));
  await twin.admin('publish', dir, '--project', 'flood');
  rmSync(dir, { recursive: true, force: true });
  key = (await createKey(twin, 'full', { project: 'flood' })).key;
}, 120_000);
afterAll(() => twin?.close());

/** The stream of an execution as a raw response: the test decides when it reads. */
function openStream(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${key}` } }, resolve);
    req.on('error', reject);
    req.end();
  });
}

async function readAll(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Resolves once `check` holds, looking again every few milliseconds; rejects after a generous deadline. */
async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('a reader that stops reading a busy stream', () => {
  it('writes only what the reader takes, leaves the rest in the log, and ends with resume (slow_reader)', async () => {
    // Arrange: the execution, finished (its log holds every event), and its stream read once by a reader that keeps up.
    const words = Array.from({ length: 10 }, () => randomBytes((WORD_BYTES * 3) / 4).toString('base64url')).join(' ') + ' ';
    const run = await publishedClient(twin, key).execute('flood', { user_id: 'u', input: { message: words } });
    expect(run.body).toMatchObject({ status: 'completed', output: 'flooded' });
    const executionId = run.body.execution_id as string;
    const url = `${twin.url}/prod/api/v1/published/executions/${executionId}/stream`;

    // Read twice: the first reading also grows the function's heap to what such a stream needs.
    await readAll(await openStream(url));
    const prompt = await readAll(await openStream(url));
    expectDocumented({ method: 'GET', url }, { status: 200, headers: { 'content-type': 'text/event-stream' }, text: prompt });
    const all = parseEventStream(prompt);
    expect(all.at(-1)!.event).toBe('complete');
    expect(Buffer.byteLength(prompt)).toBeGreaterThan(NODES * 1_000_000);
    await twin.settled(['PublishedStreamExecution']);

    // Act: the same stream, to a reader that takes the headers and then nothing, until the function gives up on it.
    const stalled = await openStream(url);
    stalled.pause();
    await until(() => functionLog.some((line) => line.includes('the reader took nothing')), 'the function to give up on the reader');
    stalled.resume();
    const text = await readAll(stalled);
    await twin.settled(['PublishedStreamExecution']);

    // Assert: every event it sent is the log's, in order, and the last is the resume notice, where the reader stopped.
    expectDocumented({ method: 'GET', url }, { status: 200, headers: { 'content-type': 'text/event-stream' }, text });
    const events = parseEventStream(text);
    const resume = events.at(-1)!;
    expect(resume.event).toBe('resume');
    const sent = events.slice(0, -1);
    expect(sent.map((event) => Number(event.id))).toEqual(sent.map((_, i) => i + 1));
    expect(sent.length).toBeLessThan(all.length - 1);
    expect(JSON.parse(resume.data)).toEqual({
      last_event_id: sent.length,
      resume_url: `${twin.url}/prod/api/v1/published/executions/${executionId}/stream?after=${sent.length}`,
      reason: 'slow_reader',
    });
    // The function held back what the reader did not take: it wrote well short of the log (the rest never left the
    // log, as the resume point shows; on a loaded machine the kernel's buffers took about half of it). Its heap is no measure of that: the garbage collector frees the prompt reading's
    // garbage when it pleases (on Node 24 a stalled stream's peak has come out up to 15 MB above it).
    expect(Buffer.byteLength(text)).toBeLessThan(Buffer.byteLength(prompt) * 0.75);

    // And the resume URL continues exactly where the reader stopped, to the end.
    const rest = parseEventStream(await readAll(await openStream(JSON.parse(resume.data).resume_url as string)));
    expect(rest.map((event) => Number(event.id))).toEqual(all.slice(sent.length).map((event) => Number(event.id)));
  }, 240_000);
});
