import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Route } from '#functions/routes.ts';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { localContext } from '#lib/twin/api-gateway-event.ts';
import { createApiServer, type RouteFunction } from '#lib/twin/http-server.ts';
import { eventOf, toInvokePayload } from '#lib/twin/lambda/invoke-payload.ts';
import { installLambdaStreamingGlobals, type LocalResponseStream } from '#lib/twin/lambda-streaming.ts';
import { http } from '../support/http.ts';

/** The twin's API adapter against probe handlers: the stage prefix, the proxy event, and the streaming idle limit. */
const IDLE_MS = 400;

const probeRoute = (id: string, path: string, streaming = false, method: Route['method'] = 'GET'): Route => ({
  id,
  method,
  path,
  handler: 'unused',
  errorShape: 'published',
  tables: {},
  streaming,
});

/**
 * Probe handlers run in this process: what is tested here is the adapter, not the function isolation. The event is
 * the one a function's worker would build from the invocation (the body put in as the runtime puts it).
 */
const inProcess = (handler: (event: APIGatewayProxyEvent, ...rest: never[]) => Promise<unknown>): RouteFunction => ({
  invoke: (event, body) =>
    (handler as (event: APIGatewayProxyEvent, context: unknown) => Promise<unknown>)(
      eventOf(toInvokePayload(event, body)) as APIGatewayProxyEvent,
      localContext('probe', 29_000),
    ),
  invokeStreaming: async (event, stream: LocalResponseStream) => {
    await (handler as (event: APIGatewayProxyEvent, stream: LocalResponseStream, context: unknown) => Promise<unknown>)(
      event,
      stream,
      localContext('probe', 900_000),
    );
  },
});

const echo = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => ({
  statusCode: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    path: event.path,
    resource: event.resource,
    requestContextPath: event.requestContext.path,
    stage: event.requestContext.stage,
    pathParameters: event.pathParameters,
    forwardedProto: event.headers['X-Forwarded-Proto'],
    body: event.body,
    isBase64Encoded: event.isBase64Encoded,
  }),
});

installLambdaStreamingGlobals();
const awslambda = (
  globalThis as unknown as {
    awslambda: {
      streamifyResponse<T>(handler: T): T;
      HttpResponseStream: { from(stream: NodeJS.WritableStream, prelude: object): NodeJS.WritableStream };
    };
  }
).awslambda;

/** Writes `chunks` bytes, one every `everyMs`, then ends. */
const trickle = (chunks: number, everyMs: number) =>
  awslambda.streamifyResponse(async (_event: unknown, responseStream: NodeJS.WritableStream) => {
    const stream = awslambda.HttpResponseStream.from(responseStream, { statusCode: 200, headers: { 'content-type': 'text/plain' } });
    for (let i = 0; i < chunks; i += 1) {
      stream.write(`${i}\n`);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
    stream.end('done\n');
  }) as unknown as (event: APIGatewayProxyEvent) => Promise<unknown>;

let server: Server;
let base: string;

beforeAll(async () => {
  server = createApiServer(
    [
      { route: probeRoute('Echo', '/api/v1/things/{thing_id}'), fn: inProcess(echo) },
      { route: probeRoute('EchoPost', '/api/v1/things/{thing_id}', false, 'POST'), fn: inProcess(echo) },
      { route: probeRoute('Silent', '/api/v1/silent', true), fn: inProcess(trickle(2, IDLE_MS * 3)) },
      { route: probeRoute('Chatty', '/api/v1/chatty', true), fn: inProcess(trickle(8, IDLE_MS / 4)) },
    ],
    { bodyTimeoutMs: 30_000, stage: 'prod', streamIdleTimeoutMs: IDLE_MS },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function rawGet(url: string): Promise<{ status: number; text: string; complete: boolean }> {
  return new Promise((resolve) => {
    request(url, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text, complete: response.complete }));
      response.on('error', () => resolve({ status: response.statusCode ?? 0, text, complete: false }));
      response.on('aborted', () => resolve({ status: response.statusCode ?? 0, text, complete: false }));
    }).end();
  });
}

describe('the API adapter serves the stage as API Gateway does', () => {
  it('builds the proxy event with the path without the stage and requestContext.path with it', async () => {
    const response = await http(`${base}/prod/api/v1/things/t%201`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      path: '/api/v1/things/t%201',
      resource: '/api/v1/things/{thing_id}',
      requestContextPath: '/prod/api/v1/things/t%201',
      stage: 'prod',
      pathParameters: { thing_id: 't 1' },
      forwardedProto: 'http',
      body: null,
      isBase64Encoded: false,
    });
  });

  it('keeps answering the short local URL, with the same path in both places', async () => {
    const response = await http(`${base}/api/v1/things/abc`);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ path: '/api/v1/things/abc', requestContextPath: '/api/v1/things/abc', stage: 'prod' });
  });

  it('hands a request body over as base64, whatever its Content-Type (the binary media types are every type)', async () => {
    const bytes = Buffer.from([0x7b, 0xff, 0x00, 0x7d]);
    for (const headers of [
      { 'content-type': 'application/json' },
      { 'content-type': 'text/plain; charset=latin1' },
      { 'content-type': 'IMAGE/PNG' },
    ]) {
      const response = await http(`${base}/prod/api/v1/things/a`, { method: 'POST', body: bytes, headers });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ isBase64Encoded: true, body: bytes.toString('base64') });
    }
    const empty = await http(`${base}/prod/api/v1/things/a`, { method: 'POST' });
    expect(empty.body).toMatchObject({ isBase64Encoded: false, body: null });
  });

  it('answers 404 for another stage, as the deployed API has only prod', async () => {
    const response = await http(`${base}/dev/api/v1/things/abc`);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Not Found', detail: 'Not Found' });
  });
});

describe('the streaming shim ends a response that stays silent past the idle limit', () => {
  it('cuts a stream that sends nothing for longer than the idle limit', async () => {
    const response = await rawGet(`${base}/prod/api/v1/silent`);
    expect(response.status).toBe(200);
    expect(response.complete).toBe(false);
    expect(response.text).toBe('0\n');
  });

  it('lets a stream that keeps sending bytes run past the idle limit', async () => {
    const response = await rawGet(`${base}/prod/api/v1/chatty`);
    expect(response.complete).toBe(true);
    expect(response.text).toBe('0\n1\n2\n3\n4\n5\n6\n7\ndone\n');
  });
});
