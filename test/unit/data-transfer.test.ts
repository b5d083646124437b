import { Writable } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { emptyCostUnits, onRequestCost, type CostUnits, type Metering } from '#shared/metering/cost-meter.ts';
import {
  API_GATEWAY_HEADER_BYTES,
  bufferedResponseBytes,
  streamedHeadBytes,
  takeDataTransferLeftBefore,
} from '#shared/metering/data-transfer-meter.ts';
import { NotFoundError } from '#shared/errors.ts';
import { jsonResponse, serveStream, withHttpStack } from '#shared/http/http-stack.ts';
import { invocationMetering, settleUsage } from '#shared/metering/usage-settlement.ts';
import { localContext } from '#lib/twin/api-gateway-event.ts';

// Every handler stack needs its usage table; these requests bill nobody, so nothing is written to it.
vi.stubEnv('USAGE_TABLE', 'usage-not-written');

/**
 * The bytes an API answer costs in data transfer out, as data-transfer-meter.ts defines them: the HTTP/1.1 message
 * (status line, the function's headers, the framing header, API Gateway's own headers as a fixed estimate, the blank
 * line) and the body, or every byte written to a stream.
 */
const gatewayHeaders = ' '.repeat(API_GATEWAY_HEADER_BYTES);
const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

describe('a buffered answer', () => {
  it("counts its status line, headers, Content-Length, the gateway's headers and its body, as the client gets them", () => {
    const body = '{"event_id":"evt_1","status":"accepted","note":"é"}';
    const message = `HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nContent-Length: ${bytes(body)}\r\n${gatewayHeaders}\r\n${body}`;
    expect(bufferedResponseBytes({ statusCode: 201, headers: { 'content-type': 'application/json' }, body })).toBe(bytes(message));
  });

  it('counts a base64 body decoded, a multi-value header once per value, and a name in both maps as the multi-value one', () => {
    const payload = Buffer.from([0, 1, 2, 3, 255]);
    const response = {
      statusCode: 200,
      headers: { 'content-type': 'application/octet-stream', 'x-a': 'dropped' },
      multiValueHeaders: { 'x-a': ['1', '22'] },
      body: payload.toString('base64'),
      isBase64Encoded: true,
    };
    const head = 'HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\nx-a: 1\r\nx-a: 22\r\nContent-Length: 5\r\n';
    expect(bufferedResponseBytes(response)).toBe(bytes(head) + API_GATEWAY_HEADER_BYTES + 2 + 5);
  });

  it("estimates API Gateway's own headers from the lines a REST API adds", () => {
    const lines = [
      'Date: Thu, 26 Nov 2026 12:00:00 GMT',
      'Connection: keep-alive',
      'x-amzn-RequestId: 8f6a2c1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
      'x-amz-apigw-id: Ab1CdEFGhIAEXyZ=',
      'X-Amzn-Trace-Id: Root=1-6565a1b2-0123456789abcdef01234567;Sampled=0;Lineage=1:0123abcd:0',
    ];
    expect(API_GATEWAY_HEADER_BYTES).toBe(bytes(lines.map((line) => `${line}\r\n`).join('')));
  });
});

describe('a streamed answer', () => {
  it('opens with a head that says Transfer-Encoding: chunked instead of a length', () => {
    const head = `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n${gatewayHeaders}\r\n`;
    expect(streamedHeadBytes({ statusCode: 200, headers: { 'content-type': 'text/event-stream' } })).toBe(bytes(head));
  });
});

/** A Lambda streaming runtime that keeps what a function sends: the prelude and every body byte. */
function fakeStreamingRuntime() {
  const sent: { prelude?: { statusCode: number; headers?: Record<string, string> }; chunks: Buffer[] } = { chunks: [] };
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      sent.chunks.push(chunk);
      callback();
    },
  });
  const runtime = {
    streamifyResponse: <T>(handler: T) => handler,
    HttpResponseStream: {
      from(stream: Writable, prelude: { statusCode: number; headers?: Record<string, string> }) {
        sent.prelude = prelude;
        return stream;
      },
    },
  };
  const globals = globalThis as { awslambda?: Record<string, unknown> };
  globals.awslambda = { ...globals.awslambda, ...runtime };
  return { sink, sent, received: () => streamedHeadBytes(sent.prelude!) + Buffer.concat(sent.chunks).byteLength };
}

/** The units each invocation reported as it ended (the settlement's in-process channel, beside the metrics). */
function reportedUnits(): CostUnits[] {
  const units: CostUnits[] = [];
  onRequestCost((_operation, spent) => units.push(spent));
  return units;
}

const event = { headers: {}, body: null, httpMethod: 'GET' } as unknown as APIGatewayProxyEvent;
type StreamingHandler = (request: APIGatewayProxyEvent, stream: Writable, context: Context) => Promise<void>;

describe("the HTTP stack meters each answer's bytes before its usage is written", () => {
  beforeEach(() => void takeDataTransferLeftBefore());

  it('counts a buffered answer whole, and a refusal as the error mapper shapes it', async () => {
    const units = reportedUnits();
    const answer = jsonResponse(200, { workflows: ['a', 'b'] });
    const ok = withHttpStack({ errorShape: 'published', path: '/api/v1/published/workflows' }, async () => answer);
    expect(await ok(event, localContext('List', 1000))).toEqual(answer);
    const refused = withHttpStack({ errorShape: 'published', path: '/api/v1/published/workflows' }, async () => {
      throw new NotFoundError('Workflow not found');
    });
    const refusal = await refused(event, localContext('List', 1000));
    expect(refusal.statusCode).toBe(404);
    expect(units.map((spent) => spent.dataTransferOutBytes)).toEqual([bufferedResponseBytes(answer), bufferedResponseBytes(refusal)]);
  });

  it('counts the CORS headers a browser-serving route adds to its answers', async () => {
    const units = reportedUnits();
    const cors = { origins: ['https://app.example'], methods: ['GET'] };
    const handler = withHttpStack({ errorShape: 'published', path: '/api/v1/published/workflows' }, async () => jsonResponse(200, {}), {
      cors,
    });
    const answer = await handler({ ...event, headers: { origin: 'https://app.example' } }, localContext('List', 1000));
    expect(Object.keys(answer.headers ?? {}).length).toBeGreaterThan(1);
    expect(units.at(-1)!.dataTransferOutBytes).toBe(bufferedResponseBytes(answer));
  });

  it('counts every byte a streamed answer writes, head included', async () => {
    const units = reportedUnits();
    const runtime = fakeStreamingRuntime();
    const handler = withHttpStack(
      { errorShape: 'published', path: '/api/v1/published/workflows/{id}/stream', streaming: true },
      async (_request, context) =>
        serveStream(context, { 'content-type': 'text/event-stream' }, async (sink) => {
          sink.write('id: 1\nevent: start\ndata: {}\n\n');
          sink.write(`: ${'x'.repeat(5000)}\n\n`);
          sink.write('id: 2\nevent: end\ndata: {"status":"completed","text":"ünïcode"}\n\n');
        }),
    ) as unknown as StreamingHandler;
    await handler(event, runtime.sink, localContext('Stream', 1000));
    expect(runtime.sent.chunks.length).toBeGreaterThanOrEqual(3);
    expect(units.at(-1)!.dataTransferOutBytes).toBe(runtime.received());
  });

  it("counts a streaming route's refusal, which is written after the usage", async () => {
    const units = reportedUnits();
    const runtime = fakeStreamingRuntime();
    const handler = withHttpStack(
      { errorShape: 'published', path: '/api/v1/published/workflows/{id}/stream', streaming: true },
      async () => {
        throw new NotFoundError('Workflow not found');
      },
    ) as unknown as StreamingHandler;
    await handler(event, runtime.sink, localContext('Stream', 1000));
    expect(runtime.sent.prelude?.statusCode).toBe(404);
    expect(units.at(-1)!.dataTransferOutBytes).toBe(runtime.received());
  });

  it('counts the error body that ends a stream which failed after it opened', async () => {
    const units = reportedUnits();
    const runtime = fakeStreamingRuntime();
    const handler = withHttpStack(
      { errorShape: 'published', path: '/api/v1/published/workflows/{id}/stream', streaming: true },
      async (_request, context) =>
        serveStream(context, { 'content-type': 'text/event-stream' }, async (sink) => {
          sink.write('id: 1\nevent: start\ndata: {}\n\n');
          throw new Error('the log could not be read');
        }),
    ) as unknown as StreamingHandler;
    await handler(event, runtime.sink, localContext('Stream', 1000));
    expect(Buffer.concat(runtime.sent.chunks).toString()).toMatch(/Internal server error/);
    expect(units.at(-1)!.dataTransferOutBytes).toBe(runtime.received());
  });
});

describe('an answer whose usage an earlier write carried (a webhook request)', () => {
  const context = { functionName: 'PostEvent', memoryLimitInMB: '256' } as Context;
  /** As a limits update that carried everything so far leaves it (cost-meter.ts `usageToCarry`: the invocation itself included). */
  const carried = (metering: Metering): Metering => ({
    ...metering,
    subject: 'link#l1',
    written: { ...metering.units, lambdaInvocations: 1, lambdaGbMs: 0 },
  });

  beforeEach(() => void takeDataTransferLeftBefore());

  it('writes no usage of its own for its bytes: the next invocation of the instance carries them', async () => {
    const added: { subject: string; spent: CostUnits }[] = [];
    const meter = { add: async (subject: string, spent: CostUnits) => void added.push({ subject, spent }) };
    const units = reportedUnits();

    const first = carried(invocationMetering(context, { ...emptyCostUnits(), apiRequests: 1 }));
    first.units.dataTransferOutBytes += 420;
    await settleUsage(meter, first, context);
    expect(added).toEqual([]);

    // The next request of the same instance starts with them: its admission carries them to the usage item.
    const second = invocationMetering(context, { ...emptyCostUnits(), apiRequests: 1 });
    expect(second.units.dataTransferOutBytes).toBe(420);
    second.subject = 'link#l1';
    second.units.dataTransferOutBytes += 380;
    await settleUsage(meter, second, context);
    expect(added).toHaveLength(1);
    expect(added[0]!.spent.dataTransferOutBytes).toBe(800);
    // The metrics show each invocation's own answer once.
    expect(units.map((spent) => spent.dataTransferOutBytes)).toEqual([420, 380]);
  });

  it('passes them on through a request nobody is billed for, whose own answer is not counted', async () => {
    const meter = { add: async () => undefined };
    const first = carried(invocationMetering(context, { ...emptyCostUnits(), apiRequests: 1 }));
    first.units.dataTransferOutBytes += 420;
    await settleUsage(meter, first, context);
    const unknownToken = invocationMetering(context, { ...emptyCostUnits(), apiRequests: 1 });
    unknownToken.units.dataTransferOutBytes += 150;
    await settleUsage(meter, unknownToken, context);
    expect(invocationMetering(context, emptyCostUnits()).units.dataTransferOutBytes).toBe(420);
  });
});
