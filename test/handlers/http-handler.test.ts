import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { httpHandler, jsonResponse } from '#shared/http-handler.ts';
import { NotFoundError, RateLimitedError, ValidationError } from '#shared/errors.ts';
import { localContext } from '#lib/local/api-gateway-event.ts';

const event = { headers: {}, body: null } as unknown as APIGatewayProxyEvent;
const context: Context = localContext('test', 1000);

describe('the shared middy stack maps errors to each API\'s body shape', () => {
  it('passes a successful response through', async () => {
    const handler = httpHandler({ errorShape: 'webhook' }, async () => jsonResponse(201, { ok: true }));
    expect(await handler(event, context)).toEqual({ statusCode: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });
  });

  it('gives webhook validation errors as {error, details}', async () => {
    const handler = httpHandler({ errorShape: 'webhook' }, async () => {
      throw new ValidationError([{ field: 'audio.url', message: 'scheme must be https' }]);
    });
    const response = await handler(event, context);
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({ error: 'Validation error', details: [{ field: 'audio.url', message: 'scheme must be https' }] });
  });

  it('gives published-API errors as {detail}', async () => {
    const handler = httpHandler({ errorShape: 'published' }, async () => {
      throw new NotFoundError('Workflow not found');
    });
    const response = await handler(event, context);
    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body)).toEqual({ detail: 'Workflow not found' });
  });

  it('adds an integer Retry-After to 429 answers, rounded up to at least one second', async () => {
    const handler = httpHandler({ errorShape: 'webhook' }, async () => {
      throw new RateLimitedError('slow down', 1200);
    });
    const response = await handler(event, context);
    expect(response.statusCode).toBe(429);
    expect(response.headers).toMatchObject({ 'retry-after': '2' });
    expect(new RateLimitedError('x', 10).retryAfterSeconds).toBe(1);
  });

  it('hides unexpected errors behind a generic 500', async () => {
    const handler = httpHandler({ errorShape: 'webhook' }, async () => {
      throw new Error('connection string with a password in it');
    });
    const response = await handler(event, context);
    expect(response.statusCode).toBe(500);
    expect(JSON.parse(response.body)).toEqual({ error: 'Internal server error' });
  });
});
