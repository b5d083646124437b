import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { CostUnits } from '#shared/metering/cost-meter.ts';

/**
 * The CloudWatch Logs bytes an invocation is billed for: what the handler stack writes to stdout and stderr (what
 * Lambda ingests), through the real Powertools Logger and Metrics, plus Lambda's own lines. Every byte the process
 * writes is captured here, so the metered figures can be checked against the bytes themselves.
 */
vi.stubEnv('USAGE_TABLE', 'usage-not-written');
vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'INFO');
vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'LogMeterTest');
vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'log-meter-test');

/** Every chunk written to stdout or stderr, in order, instead of the terminal. */
const written: string[] = [];
for (const stream of [process.stdout, process.stderr]) {
  stream.write = (chunk: string | Uint8Array, ...rest: unknown[]) => {
    written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    const callback = rest.find((argument) => typeof argument === 'function') as (() => void) | undefined;
    callback?.();
    return true;
  };
}
const bytes = (chunks: string[]) => chunks.reduce((sum, chunk) => sum + Buffer.byteLength(chunk), 0);
/** Powertools' EMF records: written as the invocation ends, after its usage is recorded. */
const isMetricsRecord = (chunk: string) => chunk.includes('"_aws"');

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<unknown>;
let PLATFORM: number;
let handlerLogging: (name: string, lines: number, size: number, gate?: Promise<void>) => Handler;
let contextOf: (name: string) => Context;
const metered: { fn: string; units: CostUnits }[] = [];
const event = { headers: {}, body: null, httpMethod: 'GET' } as unknown as APIGatewayProxyEvent;

beforeAll(async () => {
  const { withHttpStack, jsonResponse } = await import('#shared/http/http-stack.ts');
  const { logger } = await import('#shared/lambda/powertools.ts');
  const { onRequestCost } = await import('#shared/metering/cost-meter.ts');
  const { localContext } = await import('#lib/twin/api-gateway-event.ts');
  // An HTTP function's request: Lambda's own lines and API Gateway's access log line, both ingested per request.
  const { ACCESS_LOG_LINE_BYTES, LAMBDA_PLATFORM_LOG_BYTES } = await import('#shared/metering/log-meter.ts');
  PLATFORM = LAMBDA_PLATFORM_LOG_BYTES + ACCESS_LOG_LINE_BYTES;
  onRequestCost((fn, units) => metered.push({ fn, units: { ...units } }));
  contextOf = (name) => localContext(name, 5000);
  handlerLogging = (name, lines, size, gate) =>
    withHttpStack({ errorShape: 'published', path: '/api/v1/published/workflows' }, async () => {
      for (let i = 0; i < lines; i += 1) {
        logger.info(`from ${name}`, { line: i, payload: 'x'.repeat(size) });
        if (i === 0 && gate) await gate;
      }
      return jsonResponse(200, { ok: true });
    });
});

/** Runs one request, answering the chunks written while it ran and what was metered for it. */
async function request(handler: Handler, name: string) {
  const from = written.length;
  await handler(event, contextOf(name));
  const chunks = written.slice(from);
  return {
    chunks,
    logBytes: metered.at(-1)!.units.logBytes,
    closing: bytes(chunks.filter(isMetricsRecord)),
    own: bytes(chunks.filter((chunk) => !isMetricsRecord(chunk))),
  };
}

describe('an invocation’s log bytes', () => {
  it('are the bytes its log lines took, plus Lambda’s own lines; its closing metrics records go to the next invocation', async () => {
    expect(PLATFORM).toBeGreaterThan(250 + 400);
    expect(PLATFORM).toBeLessThan(400 + 500);
    const before = bytes(written);
    const handler = handlerLogging('sequential', 3, 200);
    const first = await request(handler, 'Sequential');
    // What was written before the first invocation (an initialization's lines) is the first invocation's.
    expect(first.logBytes).toBe(PLATFORM + before + first.own);
    expect(first.own).toBeGreaterThan(3 * 200);
    expect(first.closing).toBeGreaterThan(200);

    let previous = first;
    for (const size of [10, 1000, 50]) {
      const next = await request(handlerLogging('sequential', 2, size), 'Sequential');
      expect(next.logBytes).toBe(PLATFORM + previous.closing + next.own);
      // Every request closes with the same records, but for the digits of its latency: within a few bytes, the
      // request's log bytes are the bytes it wrote, plus the fixed overhead of Lambda's lines.
      expect(Math.abs(next.logBytes - (bytes(next.chunks) + PLATFORM))).toBeLessThanOrEqual(16);
      previous = next;
    }
  });

  it('keep concurrent requests apart: each counts its own lines, whichever writes when', async () => {
    const carried = (await request(handlerLogging('warm-up', 0, 0), 'WarmUp')).closing;
    let openA!: () => void;
    let openB!: () => void;
    const gateA = new Promise<void>((resolve) => (openA = resolve));
    const gateB = new Promise<void>((resolve) => (openB = resolve));
    const from = written.length;
    const a = handlerLogging('A', 4, 500, gateA)(event, contextOf('A'));
    const b = handlerLogging('B', 2, 20, gateB)(event, contextOf('B'));
    // Interleaved: A's first line, B's first line, then B ends while A waits, then A ends.
    const wrote = (name: string) => written.slice(from).some((chunk) => chunk.includes(`"message":"from ${name}"`));
    while (!wrote('A') || !wrote('B')) await new Promise((resolve) => setImmediate(resolve));
    openB();
    await b;
    openA();
    await a;
    const chunks = written.slice(from);
    const own = (name: string) => bytes(chunks.filter((chunk) => chunk.includes(`"message":"from ${name}"`)));
    const unitsOf = (fn: string) => metered.filter((entry) => entry.fn === fn).at(-1)!.units;
    expect(chunks.filter((chunk) => chunk.includes('"message":"from A"'))).toHaveLength(4);
    // A started first: it takes what the warm-up wrote after its usage; B started with nothing carried.
    expect(unitsOf('A').logBytes).toBe(PLATFORM + carried + own('A'));
    expect(unitsOf('B').logBytes).toBe(PLATFORM + own('B'));
    expect(own('A') - own('B')).toBeGreaterThan(4 * 500 - 2 * 20);
  });
});
