import { gunzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';

// Every handler stack needs its usage table; the documents bill nobody, so nothing is written to it.
vi.stubEnv('USAGE_TABLE', 'usage-not-written');
import { localContext } from '#lib/twin/api-gateway-event.ts';

type Event = APIGatewayProxyEvent | APIGatewayProxyEventV2;
type Handler = (event: Event, context: Context) => Promise<APIGatewayProxyResult>;

const API_HOST = 'abc123defg.execute-api.eu-west-1.amazonaws.com';
const PUBLISHED_DOCUMENTATION = '#published/handlers/documentation.ts';
const WEBHOOK_DOCUMENTATION = '#inbound/handlers/documentation.ts';

/**
 * The proxy event API Gateway sends for `GET <path>` as the caller asked for `requestPath` on `host`: `path` without
 * the stage, `requestContext.path` with it (or with a custom domain's base path), the Host and scheme the caller used.
 */
function awsEvent(path: string, options: { host?: string; requestPath?: string; headers?: Record<string, string> } = {}) {
  const host = options.host ?? API_HOST;
  return {
    resource: path,
    path,
    httpMethod: 'GET',
    headers: options.headers ?? { Host: host, 'X-Forwarded-Proto': 'https', 'X-Forwarded-Port': '443', 'X-Forwarded-For': '198.51.100.10' },
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    requestContext: {
      resourcePath: path,
      httpMethod: 'GET',
      path: options.requestPath ?? `/prod${path}`,
      stage: 'prod',
      domainName: host,
      domainPrefix: host.split('.')[0],
      identity: { sourceIp: '198.51.100.10' },
    },
    body: null,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEvent;
}

/**
 * The payload format 2.0 event an HTTP API sends for `<method> <rawPath>` on `host` (its `$default` stage: no stage in
 * the path): header names in lower case, the route matched as `routeKey` (`$default` when none did)
 * (docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
 */
function httpApiEvent(
  rawPath: string,
  options: { routeKey?: string; method?: string; host?: string; headers?: Record<string, string> } = {},
): APIGatewayProxyEventV2 {
  const host = options.host ?? API_HOST;
  const method = options.method ?? 'GET';
  const routeKey = options.routeKey ?? `${method} ${rawPath}`;
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString: '',
    headers: options.headers ?? { host, 'x-forwarded-proto': 'https', 'x-forwarded-port': '443', 'x-forwarded-for': '198.51.100.10' },
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123defg',
      domainName: host,
      domainPrefix: host.split('.')[0]!,
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '198.51.100.10', userAgent: 'test' },
      requestId: 'request',
      routeKey,
      stage: '$default',
      time: '01/May/2026:12:00:00 +0000',
      timeEpoch: 0,
    },
  };
}

const DOCUMENTS = [
  ['PublishedOpenApi', PUBLISHED_DOCUMENTATION, '/api/v1/published/openapi.json'],
  ['PublishedOpenApi31', PUBLISHED_DOCUMENTATION, '/api/v1/published/openapi-3.1.json'],
] as const;
const WEBHOOK_DOCUMENTS = ['/api/v1/webhooks/openapi.json', '/api/v1/webhooks/openapi-3.1.json'];

/** The function's name in its context: the one the route's function has (routes share an API's documentation function). */
const functionOf = (module: string) => (module === WEBHOOK_DOCUMENTATION ? 'WebhookDocs' : 'PublishedDocs');

async function answer(module: string, event: Event) {
  const { handler } = (await import(module)) as { handler: Handler };
  return handler(event, localContext(functionOf(module), 29_000));
}

async function served(module: string, event: Event) {
  const response = await answer(module, event);
  expect(response.statusCode).toBe(200);
  const document = JSON.parse(response.body) as { servers: { url: string; variables: Record<string, { default: string }> }[] };
  const [server] = document.servers;
  const [variable] = Object.values(server!.variables);
  return { url: server!.url, base: variable!.default };
}

describe.each(DOCUMENTS)('%s on AWS', (_routeId, module, path) => {
  const basePath = path.slice(0, path.lastIndexOf('/'));

  it('names the stage URL the caller used as its server', async () => {
    const { url, base } = await served(module, awsEvent(path));

    expect(base).toBe(`https://${API_HOST}/prod`);
    expect(url.replace(/^\{\w+\}/, base)).toBe(`https://${API_HOST}/prod${basePath}`);
  });

  it('names a custom domain and its base path, as the caller used them', async () => {
    const event = awsEvent(path, { host: 'api.example.com', requestPath: `/workflows${path}` });

    expect((await served(module, event)).base).toBe('https://api.example.com/workflows');
  });

  it("falls back to API Gateway's domain name without a Host header, and to the path alone without either", async () => {
    const withoutHost = awsEvent(path, { headers: { 'X-Forwarded-Proto': 'https' } });
    const withNeither = {
      ...withoutHost,
      requestContext: { ...withoutHost.requestContext, domainName: undefined },
    } as unknown as APIGatewayProxyEvent;

    expect((await served(module, withoutHost)).base).toBe(`https://${API_HOST}/prod`);
    expect((await served(module, withNeither)).base).toBe('/prod');
  });

  it("names the deployment's own domain, not a Host past DNS's bounds or a port past 65535", async () => {
    for (const host of [`${'a'.repeat(5997)}.io`, `${API_HOST}:99999`]) {
      const event = awsEvent(path);
      const poisoned = { ...event, headers: { ...event.headers, Host: host } } as APIGatewayProxyEvent;
      const response = await answer(module, poisoned);

      expect(response.body).not.toContain(host);
      expect((await served(module, poisoned)).base).toBe(`https://${API_HOST}/prod`);
    }
  });

  it('is kept only to be revalidated, varies with Host and Accept-Encoding, and answers 304 to its own ETag', async () => {
    const first = await answer(module, awsEvent(path));
    const etag = first.headers!.etag as string;
    const revalidate = (host: string, ifNoneMatch: string) =>
      answer(module, awsEvent(path, { host, headers: { Host: host, 'X-Forwarded-Proto': 'https', 'If-None-Match': ifNoneMatch } }));

    expect(first.statusCode).toBe(200);
    expect(first.headers).toMatchObject({ 'cache-control': 'no-cache', vary: 'Host, Accept-Encoding' });
    expect(etag).toMatch(/^W\/"[^"]+"$/);
    const notModified = await revalidate(API_HOST, etag);
    expect(notModified).toEqual({
      statusCode: 304,
      headers: { 'cache-control': 'no-cache', etag, vary: 'Host, Accept-Encoding' },
      body: '',
    });
    // What a proxy that weakens tags, or one that strips the weakness, sends back still matches.
    expect((await revalidate(API_HOST, etag.slice(2))).statusCode).toBe(304);
    // The copy served to another host is another document: its tag does not revalidate this one.
    const elsewhere = await revalidate('api.example.com', etag);
    expect(elsewhere.statusCode).toBe(200);
    expect(elsewhere.headers!.etag).not.toBe(etag);
    expect((await revalidate(API_HOST, 'W/"stale"')).statusCode).toBe(200);
  });
});

describe('the published documents on AWS, beside the gateway that compresses them', () => {
  it("are returned whole to a caller that takes gzip: the REST API compresses them, after the function's answer", async () => {
    const event = awsEvent(DOCUMENTS[0][2]);
    const response = await answer(PUBLISHED_DOCUMENTATION, { ...event, headers: { ...event.headers, 'Accept-Encoding': 'gzip' } });

    expect(response.statusCode).toBe(200);
    expect(response.headers!['content-encoding']).toBeUndefined();
    expect(JSON.parse(response.body).openapi).toBe('3.2.0');
  });
});

describe.each(WEBHOOK_DOCUMENTS)('%s on AWS, behind the HTTP API', (path) => {
  const basePath = path.slice(0, path.lastIndexOf('/'));
  const servedAt = (event: APIGatewayProxyEventV2) => served(WEBHOOK_DOCUMENTATION, event);

  it("names the API's root the caller used as its server: the `$default` stage has no path", async () => {
    const { url, base } = await servedAt(httpApiEvent(path));

    expect(base).toBe(`https://${API_HOST}`);
    expect(url.replace(/^\{\w+\}/, base)).toBe(`https://${API_HOST}${basePath}`);
  });

  it('names a custom domain the caller used', async () => {
    expect((await servedAt(httpApiEvent(path, { host: 'hooks.example.com' }))).base).toBe('https://hooks.example.com');
  });

  it("falls back to API Gateway's domain name without a Host header, and to the path alone without either", async () => {
    const withoutHost = httpApiEvent(path, { headers: { 'x-forwarded-proto': 'https' } });
    const withNeither = {
      ...withoutHost,
      requestContext: { ...withoutHost.requestContext, domainName: undefined },
    } as unknown as APIGatewayProxyEventV2;

    expect((await servedAt(withoutHost)).base).toBe(`https://${API_HOST}`);
    expect((await servedAt(withNeither)).base).toBe('');
  });

  it("names the deployment's own domain, not a Host past DNS's bounds or a port past 65535", async () => {
    for (const host of [`${'a'.repeat(5997)}.io`, `${API_HOST}:99999`]) {
      const event = httpApiEvent(path);
      const poisoned = { ...event, headers: { ...event.headers, host } };
      const response = await answer(WEBHOOK_DOCUMENTATION, poisoned);

      expect(response.body).not.toContain(host);
      expect((await servedAt(poisoned)).base).toBe(`https://${API_HOST}`);
    }
  });

  it('compresses itself for a caller whose first choice is gzip, as an HTTP API never does, and not for one without it', async () => {
    const event = httpApiEvent(path);
    const gzipped = await answer(WEBHOOK_DOCUMENTATION, { ...event, headers: { ...event.headers, 'accept-encoding': 'gzip' } });
    const whole = await answer(WEBHOOK_DOCUMENTATION, { ...event, headers: { ...event.headers, 'accept-encoding': 'br, gzip' } });

    expect(gzipped.headers).toMatchObject({ 'content-encoding': 'gzip', vary: 'Host, Accept-Encoding' });
    expect(gzipped.isBase64Encoded).toBe(true);
    const text = gunzipSync(Buffer.from(gzipped.body, 'base64')).toString('utf8');
    expect(text).toBe(whole.body);
    expect(whole.headers!['content-encoding']).toBeUndefined();
    expect(Buffer.from(gzipped.body, 'base64').byteLength).toBeLessThan(Buffer.byteLength(whole.body) / 4);
  });

  it('answers 304 to its own ETag, with no body to compress', async () => {
    const first = await answer(WEBHOOK_DOCUMENTATION, httpApiEvent(path));
    const etag = first.headers!.etag as string;
    const event = httpApiEvent(path);
    const again = await answer(WEBHOOK_DOCUMENTATION, {
      ...event,
      headers: { ...event.headers, 'if-none-match': etag, 'accept-encoding': 'gzip' },
    });

    expect(first.headers).toMatchObject({ 'cache-control': 'no-cache', vary: 'Host, Accept-Encoding' });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers!['content-encoding']).toBeUndefined();
  });
});

describe("the webhook API's `$default` route, which the webhook documentation function takes", () => {
  it.each([
    ['a path no route has', 'GET', '/api/v1/webhooks/nothing-here'],
    ["a REST API's stage path, which the HTTP API lacks", 'GET', '/prod/api/v1/webhooks/openapi.json'],
    ['a method the document route lacks', 'POST', '/api/v1/webhooks/openapi.json'],
    ['a trailing slash, which the HTTP API routes nowhere', 'GET', '/api/v1/webhooks/openapi.json/'],
  ])("answers %s 404 in the webhook API's error shape", async (_what, method, rawPath) => {
    const response = await answer(WEBHOOK_DOCUMENTATION, httpApiEvent(rawPath, { method, routeKey: '$default' }));

    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body)).toEqual({ error: 'Not Found' });
  });
});

describe('the reference pages on AWS', () => {
  it('serves the published page at its path, and sends docs/ (which the REST API routes here too) on to it', async () => {
    const path = '/api/v1/published/docs';
    const page = await answer(PUBLISHED_DOCUMENTATION, awsEvent(path));
    const slashed = await answer(PUBLISHED_DOCUMENTATION, { ...awsEvent(path), path: `${path}/` });
    const pageUrl = `https://${API_HOST}/prod${path}`;

    expect(page.statusCode).toBe(200);
    expect(page.headers!['content-type']).toBe('text/html; charset=utf-8');
    expect(slashed.statusCode).toBe(301);
    expect(new URL(slashed.headers!.location as string, `${pageUrl}/`).href).toBe(pageUrl);
  });

  it('serves the webhook page at its path, and sends docs/ (which reaches it as the `$default` route) on to it', async () => {
    const path = '/api/v1/webhooks/docs';
    const page = await answer(WEBHOOK_DOCUMENTATION, httpApiEvent(path));
    const slashed = await answer(WEBHOOK_DOCUMENTATION, httpApiEvent(`${path}/`, { routeKey: '$default' }));
    const pageUrl = `https://${API_HOST}${path}`;

    expect(page.statusCode).toBe(200);
    expect(page.headers!['content-type']).toBe('text/html; charset=utf-8');
    expect(slashed.statusCode).toBe(301);
    expect(new URL(slashed.headers!.location as string, `${pageUrl}/`).href).toBe(pageUrl);
  });
});
