import { EventEmitter, once } from 'node:events';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPlan, type InjectedFault } from '#lib/twin/faults.ts';
import { LocalLambda, type InvocationTrace } from '#lib/twin/lambda/function-host.ts';
import { LocalResponseStream } from '#lib/twin/lambda-streaming.ts';
import { clientResponse } from '../support/client-response.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, WORKFLOW_FIXTURES } from '../support/published.ts';

/**
 * A crash fault (`lambda:error`, `lambda:crash-after-write`) retires the function's environment while another
 * streamed invocation still runs there: that stream goes on to its end. When its client leaves, the chunk the client had
 * not taken, and every later one, goes nowhere, in the environment it runs in, not the function's next one; the function
 * is not told (Lambda serves a stream whose caller left to its end:
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html). Every response ends: normally,
 * cut, or with the gateway's 502.
 */

/**
 * A client that takes the status line and the first chunk, then reads nothing: its socket never takes the chunk (its
 * write callback never comes), so the function's response stream waits for it, until the client hangs up.
 */
function stalledClient() {
  const arrivals = new EventEmitter();
  const written: string[] = [];
  let closed = false;
  const response = Object.assign(new EventEmitter(), {
    headersSent: false,
    writeHead() {
      response.headersSent = true;
    },
    flushHeaders() {},
    write(chunk: Buffer) {
      written.push(chunk.toString('utf8'));
      arrivals.emit('chunk');
      return false;
    },
    end() {},
    destroy() {
      if (closed) return;
      closed = true;
      response.emit('close');
    },
  });
  return {
    written,
    firstChunk: once(arrivals, 'chunk'),
    hangUp: () => response.destroy(),
    toClient: new LocalResponseStream(response as unknown as ServerResponse),
  };
}

describe("the Lambda host's crash faults beside a stream still running", () => {
  const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/functions/${name}.ts`, import.meta.url));
  const hosts: LocalLambda[] = [];
  // The function's timeout is what a stream its environment never hears of would wait for.
  const writer = (faults: FaultPlan) => {
    const lambda = new LocalLambda({
      functionName: 'stream-writer',
      handlerFile: fixture('stream-writer'),
      environment: {},
      timeoutSeconds: 20,
      streaming: true,
      memoryMb: 256,
      faults,
    });
    hosts.push(lambda);
    return lambda;
  };
  afterAll(async () => {
    await Promise.all(hosts.map((lambda) => lambda.close()));
  });

  /** Invocation A, on the function's environment, waiting for a client that stopped reading. */
  async function stalledStream(lambda: LocalLambda) {
    const client = stalledClient();
    const outcome = lambda.invokeStreaming({ writes: ['one ', 'two'] }, client.toClient).then(
      () => 'ended',
      (error: Error) => error.name,
    );
    await client.firstChunk;
    return { client, outcome };
  }

  async function expectColdAndWorking(lambda: LocalLambda) {
    const trace: InvocationTrace = { cold: false };
    const next = clientResponse();
    await lambda.invokeStreaming({ writes: ['three'] }, next.toClient, undefined, trace);
    expect(next.body()).toBe('three');
    expect(trace.cold).toBe(true);
  }

  it('lambda:error: the retired environment still hears that its stream closed, and the invocation ends then', async () => {
    const plan = new FaultPlan(11);
    const lambda = writer(plan);
    const stalled = await stalledStream(lambda);

    plan.set('lambda:error', 1);
    const failed = clientResponse();
    // The draw is made as the invocation starts: the rate can go back at once.
    const failure = lambda.invokeStreaming({ writes: ['never'] }, failed.toClient).catch((error: Error) => error.name);
    plan.set('lambda:error', 0);
    expect(await failure).toBe('Runtime.ExitError');
    expect(failed.log).toEqual([]);
    expect(lambda.inFlight).toBe(1);

    stalled.client.hangUp();
    // The chunk the client never took goes nowhere, and so does the function's last write: its invocation ends. Were the
    // chunk kept waiting, the function would wait for it until its timeout (Sandbox.Timedout).
    expect(await stalled.outcome).toBe('ended');
    expect(stalled.client.written).toEqual(['one ']);
    expect(lambda.inFlight).toBe(0);
    await expectColdAndWorking(lambda);
  }, 60_000);

  it('lambda:crash-after-write of another stream: the crashed one is cut, the one left running ends when its client leaves', async () => {
    const plan = new FaultPlan(12);
    const lambda = writer(plan);
    const stalled = await stalledStream(lambda);

    plan.set('lambda:crash-after-write', 1);
    const crashed = clientResponse();
    const failure = lambda.invokeStreaming({ writes: ['b1 ', 'b2'] }, crashed.toClient).catch((error: Error) => error.name);
    plan.set('lambda:crash-after-write', 0);
    expect(await failure).toBe('Runtime.ExitError');
    expect(crashed.body()).toBe('b1 b2');
    expect(crashed.log.map((entry) => entry.kind)).not.toContain('end');
    expect(crashed.toClient.destroyed).toBe(true);
    expect(lambda.inFlight).toBe(1);

    stalled.client.hangUp();
    expect(await stalled.outcome).toBe('ended');
    expect(lambda.inFlight).toBe(0);
    expect(plan.counts()['lambda:crash-after-write']).toBe(1);
    await expectColdAndWorking(lambda);
  }, 60_000);
});

/** One request to the twin's API, read as it comes: its status, its headers, its text, and how its response ended. */
interface Exchange {
  status(): number | undefined;
  headers(): IncomingHttpHeaders;
  text(): string;
  /** Resolves once `check` holds on what arrived; rejects if the response ends first. */
  until(check: (text: string) => boolean, what: string): Promise<void>;
  /** How the response ended: its end (`end`), or its connection closed before it (`cut`). */
  ended: Promise<{ status: number | undefined; how: 'end' | 'cut' }>;
  /** The client goes away, as one whose network failed. */
  hangUp(): void;
}

describe('streamed runs on a twin whose stream function crashes', () => {
  const plan = new FaultPlan(20_260_713);
  const faults: InjectedFault[] = [];
  let twin: TestTwin;
  let key: string;

  beforeAll(async () => {
    twin = await startTestTwin({ faults: plan });
    plan.onFault((fault) => faults.push(fault));
    // An execution that sleeps in Step Functions for ten minutes: its stream stays open, heartbeats only, and no function of
    // the execution is invoked meanwhile (so the crash faults below hit the stream function alone, beside it).
    const dir = mkdtempSync(join(tmpdir(), 'pause-'));
    copyFileSync(join(WORKFLOW_FIXTURES, 'echo.json'), join(dir, 'echo.json'));
    writeFileSync(
      join(dir, 'pause.json'),
      JSON.stringify({
        id: 'pause',
        name: 'Pause',
        description: 'Ten minutes asleep',
        start: 'nap',
        nodes: { nap: { type: 'wait', seconds: 600, next: 'done' }, done: { type: 'end', output: 'rested' } },
      }),
    );
    await twin.admin('publish', dir);
    rmSync(dir, { recursive: true, force: true });
    key = (await createKey(twin, 'full')).key;
  });
  afterAll(() => twin?.close());

  function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Exchange {
    const arrivals = new EventEmitter();
    let text = '';
    let status: number | undefined;
    let responseHeaders: IncomingHttpHeaders = {};
    const req = request(`${twin.url}/prod/api/v1/published${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    });
    const ended = new Promise<{ status: number | undefined; how: 'end' | 'cut' }>((resolve) => {
      req.on('error', () => resolve({ status, how: 'cut' }));
      req.on('response', (response) => {
        status = response.statusCode;
        responseHeaders = response.headers;
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
          arrivals.emit('data');
        });
        response.on('end', () => resolve({ status, how: 'end' }));
        response.on('error', () => resolve({ status, how: 'cut' }));
        response.on('close', () => resolve({ status, how: response.complete ? 'end' : 'cut' }));
      });
    });
    void ended.then(() => arrivals.emit('ended'));
    req.end(body === undefined ? undefined : JSON.stringify(body));
    return {
      status: () => status,
      headers: () => responseHeaders,
      text: () => text,
      ended,
      hangUp: () => req.destroy(),
      until: (check, what) =>
        new Promise<void>((resolve, reject) => {
          const look = () => {
            if (check(text)) {
              arrivals.off('data', look);
              arrivals.off('ended', gone);
              resolve();
            }
          };
          const gone = () => {
            arrivals.off('data', look);
            if (!check(text)) reject(new Error(`the response ended before ${what}: ${status} ${text.slice(0, 300)}`));
          };
          arrivals.on('data', look);
          arrivals.once('ended', gone);
          look();
        }),
    };
  }

  it('ends every response, and serves a stream left running in a retired environment to its end after its client leaves', async () => {
    const run = { user_id: 'u1', input: { message: 'hello' } };
    // A: the stream of an execution asleep for ten minutes, in flight on PublishedStreamWorkflow's environment.
    const waiting = send('POST', '/workflows/pause/stream', run);
    await waiting.until((text) => /"node_id":"nap"[^\n]*"status":"waiting"/.test(text), 'the execution asleep');
    const executionId = waiting.headers()['x-execution-id'] as string;
    expect(executionId).toEqual(expect.any(String));

    // B: another stream of the same function, crashed after its writes: its environment (A's too) is retired.
    plan.set('lambda:crash-after-write', 1);
    const crashed = send('POST', '/workflows/echo/stream', run);
    // Its status comes after its invocation drew the crash (the echo run's task functions invoked meanwhile may crash
    // too: Step Functions invokes them again).
    await crashed.until(() => crashed.status() !== undefined, 'its status');
    plan.set('lambda:crash-after-write', 0);
    expect(await crashed.ended).toEqual({ status: 200, how: 'cut' });
    expect(faults).toContainEqual(expect.objectContaining({ kind: 'lambda:crash-after-write', functionName: 'PublishedStreamWorkflow' }));

    // C: failed before its handler: the gateway's 502, whole.
    plan.set('lambda:error', 1);
    const failed = send('POST', '/workflows/echo/stream', run);
    expect(await failed.ended).toEqual({ status: 502, how: 'end' });
    plan.set('lambda:error', 0);

    // A's client leaves. As on Lambda, its function is not told: it streams on to nobody, in the retired environment,
    // until the execution ends (or its window does).
    expect(twin.invocationsInFlight('PublishedStreamWorkflow')).toBe(1);
    waiting.hangUp();
    expect(await waiting.ended).toEqual({ status: 200, how: 'cut' });
    expect(twin.invocationsInFlight('PublishedStreamWorkflow')).toBe(1);

    // D: the execution resumed in a fresh environment after A's last event; stopped, its stream comes to its proper end,
    // and A's, in the retired environment, ends with the same `complete`.
    const lastId = [...waiting.text().matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1])).at(-1);
    const resumed = send(
      'GET',
      `/executions/${executionId}/stream`,
      undefined,
      lastId === undefined ? {} : { 'last-event-id': String(lastId) },
    );
    await resumed.until(() => resumed.status() !== undefined, 'its status');
    const stopped = send('POST', `/executions/${executionId}/stop`);
    expect((await stopped.ended).status).toBe(200);
    expect(await resumed.ended).toEqual({ status: 200, how: 'end' });
    expect(resumed.text()).toContain('event: complete');
    await twin.settled(['PublishedStreamWorkflow'], 60_000);
    await twin.settled();
  }, 180_000);
});
