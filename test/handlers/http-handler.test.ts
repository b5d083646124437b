import { Metrics } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withHttpStack, jsonResponse } from '#shared/http/http-stack.ts';
import { NotFoundError, RateLimitedError, ValidationError } from '#shared/errors.ts';

// Every handler stack needs its usage table; these requests bill nobody, so nothing is written to it.
vi.stubEnv('USAGE_TABLE', 'usage-not-written');
import { localContext } from '#lib/twin/api-gateway-event.ts';

const event = { headers: {}, body: null } as unknown as APIGatewayProxyEvent;
const context: Context = localContext('test', 1000);

describe("the shared middy stack maps errors to each API's body shape", () => {
  it('passes a successful response through', async () => {
    const handler = withHttpStack({ errorShape: 'webhook', path: '/api/v1/webhooks/{token}/events' }, async () =>
      jsonResponse(201, { ok: true }),
    );
    expect(await handler(event, context)).toEqual({
      statusCode: 201,
      headers: { 'content-type': 'application/json' },
      body: '{"ok":true}',
    });
  });

  it('gives webhook validation errors as {error, details}', async () => {
    const handler = withHttpStack({ errorShape: 'webhook', path: '/api/v1/webhooks/{token}/events' }, async () => {
      throw new ValidationError([{ field: 'audio.url', message: 'scheme must be https' }]);
    });
    const response = await handler(event, context);
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({
      error: 'Validation error',
      details: [{ field: 'audio.url', message: 'scheme must be https' }],
    });
  });

  it('gives published-API errors as {detail}', async () => {
    const handler = withHttpStack({ errorShape: 'published', path: '/api/v1/published/workflows' }, async () => {
      throw new NotFoundError('Workflow not found');
    });
    const response = await handler(event, context);
    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body)).toEqual({ detail: 'Workflow not found' });
  });

  it('adds an integer Retry-After to 429 answers, rounded up to at least one second', async () => {
    const handler = withHttpStack({ errorShape: 'webhook', path: '/api/v1/webhooks/{token}/events' }, async () => {
      throw new RateLimitedError('slow down', 1200);
    });
    const response = await handler(event, context);
    expect(response.statusCode).toBe(429);
    expect(response.headers).toMatchObject({ 'retry-after': '2' });
    expect(new RateLimitedError('x', 10).retryAfterSeconds).toBe(1);
  });

  it('hides unexpected errors behind a generic 500', async () => {
    const handler = withHttpStack({ errorShape: 'webhook', path: '/api/v1/webhooks/{token}/events' }, async () => {
      throw new Error('connection string with a password in it');
    });
    const response = await handler(event, context);
    expect(response.statusCode).toBe(500);
    expect(JSON.parse(response.body)).toEqual({ error: 'Internal server error' });
  });
});

describe('request metrics per route group', () => {
  afterEach(() => vi.restoreAllMocks());

  /** The route groups' EMF records as the stack publishes them: one per request, its four metrics together. */
  function recordedMetrics() {
    const published: Record<string, unknown>[] = [];
    vi.spyOn(Metrics.prototype, 'publishStoredMetrics').mockImplementation(function (this: Metrics) {
      const record = this.serializeMetrics() as unknown as Record<string, unknown>;
      if (typeof record.RouteGroup === 'string') published.push(record);
      this.clearMetrics();
      return this;
    });
    const records = () =>
      published.flatMap((record) =>
        ['HttpRequests', 'Http5xx', 'Http4xx', 'HttpLatency'].map((name) => ({
          dimensions: { RouteGroup: record.RouteGroup as string },
          name,
          value: record[name] as number,
        })),
      );
    return { published, records };
  }

  it('counts a request, its server error and its latency under its group, also when the answer is an error response', async () => {
    const recorded = recordedMetrics();
    await withHttpStack({ errorShape: 'webhook', path: '/api/v1/webhooks/{token}/events' }, async () => jsonResponse(201, {}))(
      event,
      context,
    );
    await withHttpStack({ errorShape: 'published', path: '/api/v1/published/workflows' }, async () => {
      throw new Error('boom');
    })(event, context);
    await withHttpStack({ errorShape: 'published', path: '/api/v1/published/workflows' }, async () => {
      throw new NotFoundError('nope');
    })(event, context);
    const records = recorded.records();
    const of = (group: string, name: string) =>
      records.filter((record) => record.dimensions.RouteGroup === group && record.name === name).map((record) => record.value);
    // The webhook API's HTTP API measures its own requests (AWS/ApiGateway): its functions publish none.
    expect(of('webhooks', 'HttpRequests')).toEqual([]);
    expect(of('published', 'HttpRequests')).toEqual([1, 1]);
    expect(of('published', 'Http5xx')).toEqual([1, 0]);
    expect(of('published', 'HttpLatency')).toHaveLength(2);
    expect(of('published', 'HttpLatency').every((ms) => ms >= 0)).toBe(true);
    // One record (one log line) per request, its four metrics together.
    expect(recorded.published.map((record) => record.RouteGroup)).toEqual(['published', 'published']);
  });
});
