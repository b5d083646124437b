import type { AddressInfo } from 'node:net';
import { request, type Server } from 'node:http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_API_TIMEOUT_SECONDS, type Route } from '#functions/routes.ts';
import { HTTP_API_MAX_BODY_BYTES } from '#lib/twin/http-api-answers.ts';
import { createApiServer, type RouteFunction } from '#lib/twin/http-server.ts';
import { eventOf, toInvokePayload } from '#lib/twin/lambda/invoke-payload.ts';

/**
 * The twin's HTTP API (the webhook API's gateway) against probe functions run in this process: what is tested is the
 * gateway's model (docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html and
 * http-api-quotas.html), not the functions: the 2.0 event, the `$default` stage and route, how a result is read, the
 * integration timeout and the payload limit, and its own answers, which carry no Retry-After.
 */
const TIMEOUT_MS = 300;
const route = (id: string, method: Route['method'], path: string): Route => ({
  id,
  method,
  path,
  handler: 'unused',
  errorShape: 'webhook',
  tables: {},
});
let lastEvent: APIGatewayProxyEventV2 | undefined;
const probe = (answer: (event: APIGatewayProxyEventV2) => Promise<unknown>): RouteFunction => ({
  invoke: async (event, body) => {
    lastEvent = eventOf(toInvokePayload(event, body)) as APIGatewayProxyEventV2;
    return answer(lastEvent);
  },
  invokeStreaming: () => Promise.reject(new Error('an HTTP API does not stream')),
});

function serve(withDefault: boolean): Promise<{ server: Server; base: string }> {
  const fallback = {
    route: route('Fallback', 'GET', '/api/v1/webhooks/docs'),
    fn: probe(async () => ({ statusCode: 404, body: '{"error":"Not Found"}' })),
  };
  const server = createApiServer(
    [
      { route: route('Echo', 'POST', '/api/v1/webhooks/{token}/events'), fn: probe(async () => ({ statusCode: 201, body: '{}' })) },
      { route: route('Bare', 'GET', '/api/v1/webhooks/{token}/bare'), fn: probe(async () => ({ accepted: true })) },
      {
        route: route('Headers', 'GET', '/api/v1/webhooks/{token}/headers'),
        fn: probe(async () => ({ statusCode: 200, body: 'x', headers: { a: '1' }, multiValueHeaders: { b: ['2'] }, cookies: ['c=3'] })),
      },
      { route: route('Slow', 'GET', '/api/v1/webhooks/{token}/slow'), fn: probe(() => new Promise(() => undefined)) },
      { route: route('Crash', 'GET', '/api/v1/webhooks/{token}/crash'), fn: probe(() => Promise.reject(new Error('boom'))) },
    ],
    {
      gateway: 'httpApi',
      defaultRoute: withDefault ? fallback : undefined,
      bodyTimeoutMs: 30_000,
      stage: 'prod',
      streamIdleTimeoutMs: 30_000,
      httpApiTimeoutMs: TIMEOUT_MS,
    },
  );
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })),
  );
}

let api: { server: Server; base: string };
let bare: { server: Server; base: string };
beforeAll(async () => {
  api = await serve(true);
  bare = await serve(false);
});
afterAll(async () => {
  for (const { server } of [api, bare]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe("the twin's HTTP API", () => {
  it('sends payload format 2.0: lower-case headers, repeats joined by commas, cookies apart, JSON as text, other types as base64', async () => {
    // Two header lines of one name, as fetch would never send them (it joins them itself).
    await new Promise<void>((resolve, reject) => {
      const sent = request(
        `${api.base}/api/v1/webhooks/tok/events?q=1&q=2`,
        { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Twice': ['a', 'b'], Cookie: 'k=v; l=w' } },
        (response) => response.resume().on('end', resolve),
      );
      sent.on('error', reject);
      sent.end('{"é":1}');
    });
    expect(lastEvent).toMatchObject({
      version: '2.0',
      routeKey: 'POST /api/v1/webhooks/{token}/events',
      rawPath: '/api/v1/webhooks/tok/events',
      rawQueryString: 'q=1&q=2',
      queryStringParameters: { q: '1,2' },
      pathParameters: { token: 'tok' },
      cookies: ['k=v', 'l=w'],
      isBase64Encoded: false,
      body: '{"é":1}',
      requestContext: { stage: '$default', http: { method: 'POST', path: '/api/v1/webhooks/tok/events' } },
    });
    expect(lastEvent!.headers['x-twice']).toBe('a,b');
    expect(Object.keys(lastEvent!.headers).every((name) => name === name.toLowerCase())).toBe(true);
    await fetch(`${api.base}/api/v1/webhooks/tok/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: 'AB',
    });
    expect(lastEvent).toMatchObject({ isBase64Encoded: true, body: Buffer.from('AB').toString('base64') });
    // No body: no `body` field at all.
    await fetch(`${api.base}/api/v1/webhooks/tok/events`, { method: 'POST' });
    expect(lastEvent).not.toHaveProperty('body');
  });

  it('reads a result without statusCode as a 200 of its JSON, and takes headers and cookies but no multiValueHeaders', async () => {
    const plain = await fetch(`${api.base}/api/v1/webhooks/tok/bare`);
    expect(plain.status).toBe(200);
    expect(await plain.json()).toEqual({ accepted: true });
    const shaped = await fetch(`${api.base}/api/v1/webhooks/tok/headers`);
    expect(shaped.headers.get('a')).toBe('1');
    expect(shaped.headers.get('b')).toBeNull();
    expect(shaped.headers.get('set-cookie')).toBe('c=3');
  });

  it('has no stage path and no trailing-slash match: both reach the $default route, and without one its own 404', async () => {
    for (const path of ['/prod/api/v1/webhooks/tok/events', '/api/v1/webhooks/tok/events/', '/nowhere']) {
      const answer = await fetch(`${api.base}${path}`, { method: 'POST' });
      expect(answer.status, path).toBe(404);
      expect(await answer.json(), path).toEqual({ error: 'Not Found' });
      expect(lastEvent?.routeKey, path).toBe('$default');
      const own = await fetch(`${bare.base}${path}`, { method: 'POST' });
      expect(await own.json(), path).toEqual({ message: 'Not Found' });
    }
  });

  it('answers a failed integration 500 and a timed-out one 503, in its own words and without Retry-After', async () => {
    const crashed = await fetch(`${api.base}/api/v1/webhooks/tok/crash`);
    expect(crashed.status).toBe(500);
    expect(await crashed.json()).toEqual({ message: 'Internal Server Error' });
    expect(crashed.headers.get('retry-after')).toBeNull();
    const slow = await fetch(`${api.base}/api/v1/webhooks/tok/slow`);
    expect(slow.status).toBe(503);
    expect(await slow.json()).toEqual({ message: 'Service Unavailable' });
    expect(slow.headers.get('retry-after')).toBeNull();
  });

  it('refuses a body over its 10 MB payload limit itself: 413 in its own words', async () => {
    const answer = await fetch(`${api.base}/api/v1/webhooks/tok/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024 + 1) },
      body: Buffer.alloc(10 * 1024 * 1024 + 1, 0x20),
    });
    expect(answer.status).toBe(413);
    expect(await answer.json()).toEqual({ message: 'Request Entity Too Large' });
  });
});

describe("the HTTP API's figures, as AWS publishes them (docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html)", () => {
  it('an integration timeout of 30 seconds and a payload of 10 MB', () => {
    expect(HTTP_API_TIMEOUT_SECONDS).toBe(30);
    expect(HTTP_API_MAX_BODY_BYTES).toBe(10 * 1024 * 1024);
  });
});
