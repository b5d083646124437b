import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';

// Every handler stack needs its usage table; the documents bill nobody, so nothing is written to it.
vi.stubEnv('USAGE_TABLE', 'usage-not-written');
import { localContext } from '#lib/twin/api-gateway-event.ts';

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

const API_HOST = 'abc123defg.execute-api.eu-west-1.amazonaws.com';

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

const DOCUMENTS = [
  ['PublishedOpenApi', '#published/handlers/openapi.ts', '/api/v1/published/openapi.json'],
  ['PublishedOpenApi31', '#published/handlers/openapi-3-1.ts', '/api/v1/published/openapi-3.1.json'],
  ['WebhookOpenApi', '#inbound/handlers/openapi.ts', '/api/v1/webhooks/openapi.json'],
  ['WebhookOpenApi31', '#inbound/handlers/openapi-3-1.ts', '/api/v1/webhooks/openapi-3.1.json'],
] as const;

async function answer(routeId: string, module: string, event: APIGatewayProxyEvent) {
  const { handler } = (await import(module)) as { handler: Handler };
  return handler(event, localContext(routeId, 29_000));
}

async function served(routeId: string, module: string, event: APIGatewayProxyEvent) {
  const response = await answer(routeId, module, event);
  expect(response.statusCode).toBe(200);
  const document = JSON.parse(response.body) as { servers: { url: string; variables: Record<string, { default: string }> }[] };
  const [server] = document.servers;
  const [variable] = Object.values(server!.variables);
  return { url: server!.url, base: variable!.default };
}

describe.each(DOCUMENTS)('%s on AWS', (routeId, module, path) => {
  const basePath = path.slice(0, path.lastIndexOf('/'));

  it('names the stage URL the caller used as its server', async () => {
    const { url, base } = await served(routeId, module, awsEvent(path));

    expect(base).toBe(`https://${API_HOST}/prod`);
    expect(url.replace(/^\{\w+\}/, base)).toBe(`https://${API_HOST}/prod${basePath}`);
  });

  it('names a custom domain and its base path, as the caller used them', async () => {
    const event = awsEvent(path, { host: 'api.example.com', requestPath: `/workflows${path}` });

    expect((await served(routeId, module, event)).base).toBe('https://api.example.com/workflows');
  });

  it("falls back to API Gateway's domain name without a Host header, and to the path alone without either", async () => {
    const withoutHost = awsEvent(path, { headers: { 'X-Forwarded-Proto': 'https' } });
    const withNeither = {
      ...withoutHost,
      requestContext: { ...withoutHost.requestContext, domainName: undefined },
    } as unknown as APIGatewayProxyEvent;

    expect((await served(routeId, module, withoutHost)).base).toBe(`https://${API_HOST}/prod`);
    expect((await served(routeId, module, withNeither)).base).toBe('/prod');
  });

  it("names the deployment's own domain, not a Host past DNS's bounds or a port past 65535", async () => {
    for (const host of [`${'a'.repeat(5997)}.io`, `${API_HOST}:99999`]) {
      const event = awsEvent(path);
      const poisoned = { ...event, headers: { ...event.headers, Host: host } } as APIGatewayProxyEvent;
      const response = await answer(routeId, module, poisoned);

      expect(response.body).not.toContain(host);
      expect((await served(routeId, module, poisoned)).base).toBe(`https://${API_HOST}/prod`);
    }
  });

  it('is kept only to be revalidated, varies with Host and Accept-Encoding, and answers 304 to its own ETag', async () => {
    const first = await answer(routeId, module, awsEvent(path));
    const etag = first.headers!.etag as string;
    const revalidate = (host: string, ifNoneMatch: string) =>
      answer(
        routeId,
        module,
        awsEvent(path, { host, headers: { Host: host, 'X-Forwarded-Proto': 'https', 'If-None-Match': ifNoneMatch } }),
      );

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

const PAGES = [
  ['PublishedDocs', '#published/handlers/docs.ts', '/api/v1/published/docs'],
  ['WebhookDocs', '#inbound/handlers/docs.ts', '/api/v1/webhooks/docs'],
] as const;

describe.each(PAGES)('%s on AWS', (routeId, module, path) => {
  it('serves the page at its path, and sends docs/ (which API Gateway routes here too) on to it', async () => {
    const page = await answer(routeId, module, awsEvent(path));
    const slashed = await answer(routeId, module, { ...awsEvent(path), path: `${path}/` });
    const pageUrl = `https://${API_HOST}/prod${path}`;

    expect(page.statusCode).toBe(200);
    expect(page.headers!['content-type']).toBe('text/html; charset=utf-8');
    expect(slashed.statusCode).toBe(301);
    expect(new URL(slashed.headers!.location as string, `${pageUrl}/`).href).toBe(pageUrl);
  });
});
