import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localContext } from '#lib/twin/api-gateway-event.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { callEvent } from '../support/events.ts';

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
let twin: TestTwin;
let handler: Handler;
let token: string;

/** The proxy event API Gateway sends on AWS, built by hand: no local HTTP server in between. */
function apiGatewayEvent(body: string | null, options: { base64?: boolean; token?: string; sourceIp?: string } = {}) {
  return {
    resource: '/api/v1/webhooks/{token}/events',
    httpMethod: 'POST',
    headers: { 'Content-Type': 'application/json' },
    pathParameters: { token: options.token ?? token },
    requestContext: { identity: { sourceIp: options.sourceIp ?? '198.51.100.10' } },
    body: options.base64 && body !== null ? Buffer.from(body).toString('base64') : body,
    isBase64Encoded: options.base64 ?? false,
  } as unknown as APIGatewayProxyEvent;
}

beforeAll(async () => {
  // The twin sets the environment the handler reads at cold start and runs the embedded stores it talks to.
  twin = await startTestTwin();
  token = (await boundLink(twin, 'calls')).token;
  handler = ((await import('#inbound/handlers/post-event.ts')) as { handler: Handler }).handler;
});
afterAll(() => twin.close());

const context = () => localContext('WebhookPostEvent', 29_000);

describe('POST /events handler on API Gateway events', () => {
  it('accepts a base64-encoded body as API Gateway sends binary media', async () => {
    const response = await handler(apiGatewayEvent(JSON.stringify(callEvent()), { base64: true }), context());
    expect(response.statusCode).toBe(201);
  });

  it('answers 413 itself, since API Gateway lets bodies up to 10 MB through', async () => {
    const response = await handler(apiGatewayEvent(' '.repeat(1024 * 1024 + 1)), context());
    expect(response.statusCode).toBe(413);
    expect(JSON.parse(response.body)).toEqual({ error: 'Request body exceeds 1 MiB' });
  });

  it('treats a missing body as invalid JSON', async () => {
    const response = await handler(apiGatewayEvent(null), context());
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body).details).toEqual([{ field: 'body', message: 'must be valid UTF-8 JSON' }]);
  });

  it('refuses bytes that are not UTF-8', async () => {
    const invalid = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString('base64');
    const event = { ...apiGatewayEvent(null), body: invalid, isBase64Encoded: true } as APIGatewayProxyEvent;
    const response = await handler(event, context());
    expect(response.statusCode).toBe(400);
  });

  it('answers 404 for a token with the wrong shape without looking it up', async () => {
    const response = await handler(apiGatewayEvent('{}', { token: 'short' }), context());
    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body)).toEqual({ error: 'Unknown webhook link' });
  });
});
