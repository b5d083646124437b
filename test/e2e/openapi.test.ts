import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayOf, routes } from '#functions/routes.ts';
import { webhookApiDocument } from '#inbound/openapi.ts';
import { publishedApiDocument } from '#published/openapi.ts';
import { OPENAPI_31_VERSION, OPENAPI_VERSION } from '#shared/http/openapi.ts';
import { apiBaseFor, stagePathFor } from '../support/api-urls.ts';
import { http } from '../support/http.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

/** What a JSON document looks like after the trip over HTTP. */
const overTheWire = (document: unknown) => JSON.parse(JSON.stringify(document)) as unknown;

/** The document as served from `base`: its server's URL variable defaults to `base`, the rest as built. */
function servedFrom(document: any, base: string) {
  const [server] = document.servers;
  const variables = Object.fromEntries(
    Object.entries<any>(server.variables).map(([name, variable]) => [name, { ...variable, default: base }]),
  );
  return overTheWire({ ...document, servers: [{ ...server, variables }] });
}

describe('the OpenAPI documents, served', () => {
  it.each([
    ['published', '/api/v1/published/openapi.json', () => publishedApiDocument(OPENAPI_VERSION), '3.2.0'],
    ['published', '/api/v1/published/openapi-3.1.json', () => publishedApiDocument(OPENAPI_31_VERSION), '3.1.0'],
    ['webhooks', '/api/v1/webhooks/openapi.json', () => webhookApiDocument(OPENAPI_VERSION), '3.2.0'],
    ['webhooks', '/api/v1/webhooks/openapi-3.1.json', () => webhookApiDocument(OPENAPI_31_VERSION), '3.1.0'],
  ])(
    'serves the %s document at %s without a key or token, its server where it was fetched from (local and AWS-shaped URL)',
    async (_name, path, document, version) => {
      expect(new URL(twin.url).port).not.toBe('3000');
      // The webhook API's AWS-shaped URL is its local one: an HTTP API's `$default` stage has no path.
      const local = apiBaseFor(twin, path);
      for (const base of new Set([local, `${local}${stagePathFor(path)}`])) {
        const response = await http(`${base}${path}`);

        expect(response.status, base).toBe(200);
        expect(response.headers['content-type']).toBe('application/json');
        expect(response.body.openapi).toBe(version);
        expect(Object.values<any>(response.body.servers[0].variables)[0].default).toBe(base);
        expect(response.body).toEqual(servedFrom(document(), base));
        // A tool that takes the server as given reaches the same API.
        const server = (response.body.servers[0].url as string).replace(/^\{\w+\}/, base);
        expect((await http(`${server}${path.slice(path.lastIndexOf('/'))}`)).status).toBe(200);
      }
    },
  );

  it('serves the webhook API on its own host only, with no stage path: /prod and the REST API answer 404 there', async () => {
    const path = '/api/v1/webhooks/openapi.json';
    const staged = await http(`${twin.webhookUrl}/prod${path}`, { undocumented: "the HTTP API's $default stage has no path" });
    expect(staged.status).toBe(404);
    // The `$default` route's function answers it, in the webhook API's error shape.
    expect(staged.body).toEqual({ error: 'Not Found' });
    // The REST API's own 404 (its gateway response) in the Published API's shape, which the check above would hold
    // to the webhook document for the path: compared whole instead.
    for (const onRest of [`${twin.url}/prod${path}`, `${twin.url}${path}`]) {
      const answer = await fetch(onRest);
      expect(answer.status, onRest).toBe(404);
      expect(await answer.json()).toEqual({ error: 'Not Found', detail: 'Not Found' });
    }
  });

  it('keeps webhooks/openapi.json apart from the token routes, which still answer under any token', async () => {
    const document = await http(`${twin.webhookUrl}/api/v1/webhooks/openapi.json`);
    const ping = await http(`${twin.webhookUrl}/api/v1/webhooks/openapi.json/ping`);
    const post = await http(`${twin.webhookUrl}/api/v1/webhooks/openapi.json`, {
      method: 'POST',
      body: '{}',
      undocumented: 'the document is only read (GET)',
    });

    expect(document.body.info.title).toBe('Inbound Conversation Webhook API');
    expect(ping.status).toBe(404);
    expect(ping.body).toEqual({ error: 'Unknown webhook link' });
    expect(post.status).toBe(404);
  });
});

describe('what the documents say', () => {
  /** What an HTTP API answers by itself (docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html). */
  const HTTP_API_OWN_STATUSES = ['429', '500', '503'];
  const published = publishedApiDocument() as any;
  const webhooks = webhookApiDocument() as any;
  const operationOf = (route: (typeof routes)[number]) => {
    const [document, base] = route.path.startsWith('/api/v1/published/')
      ? [published, '/api/v1/published']
      : [webhooks, '/api/v1/webhooks'];
    return document.paths[route.path.slice(base.length)]?.[route.method.toLowerCase()];
  };

  it('describe every route of the route table, each with the scope its key needs', () => {
    for (const route of routes) {
      const operation = operationOf(route);
      expect(operation?.operationId, route.id).toBe(route.id);
      expect(operation.security, route.id).toEqual(route.scope ? [{ apiKey: [] }] : []);
      expect(operation['x-scope'], route.id).toBe(route.scope);
    }
  });

  /**
   * The schema a refusal of `route` has: its API's `Error`, but where the webhook API's HTTP API answers by itself, with
   * its unshapeable `{"message"}` (its throttle's 429, a failed integration's 500, a timed-out one's 503): `Refusal`
   * (either) where the function answers that status too, `GatewayError` where only the gateway does.
   */
  const refusalSchemaOf = (route: (typeof routes)[number], status: string) => {
    if (gatewayOf(route) === 'restApi' || !HTTP_API_OWN_STATUSES.includes(status)) return 'Error';
    return route.functionId === 'WebhookDocs' ? 'GatewayError' : 'Refusal';
  };

  it('give every refusal the error shape of its API, or of the HTTP API where it answers by itself', () => {
    for (const route of routes) {
      for (const [status, response] of Object.entries<any>(operationOf(route).responses)) {
        if (Number(status) >= 400)
          expect(response.content['application/json'].schema, `${route.id} ${status}`).toEqual({
            $ref: `#/components/schemas/${refusalSchemaOf(route, status)}`,
          });
      }
    }
    expect(published.components.schemas.Error.required).toEqual(['detail']);
    expect(webhooks.components.schemas.Error.properties.details.items.required).toEqual(['field', 'message']);
    expect(webhooks.components.schemas.GatewayError.required).toEqual(['message']);
    expect(webhooks.components.schemas.Refusal.anyOf).toEqual([
      { $ref: '#/components/schemas/Error' },
      { $ref: '#/components/schemas/GatewayError' },
    ]);
  });

  it("send Retry-After with every 429 but the HTTP API's own, and take an Idempotency-Key on execute and stream", () => {
    for (const route of routes)
      expect(operationOf(route).responses['429'].headers, route.id).toEqual(
        refusalSchemaOf(route, '429') === 'GatewayError' ? undefined : { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
      );
    for (const path of ['/workflows/{workflow_id}/execute', '/workflows/{workflow_id}/stream']) {
      const operation = published.paths[path].post;
      expect(operation.parameters).toContainEqual(
        expect.objectContaining({ name: 'Idempotency-Key', in: 'header', schema: expect.objectContaining({ maxLength: 255 }) }),
      );
      expect(Object.keys(operation.responses)).toContain('422');
    }
  });

  it("describe the events of both streams as items of text/event-stream, each event's data a schema of its own", () => {
    const names = (path: string) => {
      const component = published.paths[path].get?.responses['200'].content['text/event-stream'].itemSchema.$ref.split('/').at(-1);
      return published.components.schemas[component].oneOf.map((event: any) => event.properties.event.const);
    };
    expect(names('/executions/{execution_id}/stream')).toEqual([
      'start',
      'token',
      'tool_call',
      'agent_handoff',
      'node_update',
      'image',
      'error',
      'complete',
      'resume',
    ]);
    expect(names('/executions/{execution_id}/events')).toEqual(['status', 'decision', 'resume']);
  });

  it('take the request bodies from the schemas that validate them: defaults optional, refinements as words', () => {
    const execute = published.components.schemas.ExecuteRequest;
    expect(execute.required).toEqual(['user_id']);
    expect(execute.properties.initial_memory.type).toBe('object');
    const call = webhooks.components.schemas.CallEvent;
    expect(call.properties.external_id.pattern).toBe('^[A-Za-z0-9._:-]{1,255}$');
    expect(call.properties.occurred_at.description).toMatch(/one year before to one day after/);
    expect(webhooks.components.schemas.Event.oneOf).toHaveLength(2);
  });
});
