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

async function served(routeId: string, module: string, event: APIGatewayProxyEvent) {
  const { handler } = (await import(module)) as { handler: Handler };
  const response = await handler(event, localContext(routeId, 29_000));
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
});
