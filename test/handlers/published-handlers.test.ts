import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localContext } from '#lib/twin/api-gateway-event.ts';
import { LocalResponseStream } from '#lib/twin/lambda-streaming.ts';
import { startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
type StreamingHandler = (event: APIGatewayProxyEvent, stream: LocalResponseStream, context: Context) => Promise<void>;

let twin: TestTwin;
let key: string;

/** The proxy event API Gateway sends, built by hand: no HTTP server in between. */
function apiGatewayEvent(resource: string, pathParameters: Record<string, string>, body: unknown, authorization?: string) {
  return {
    resource,
    path: resource.replace(/\{(\w+)\}/g, (_, name: string) => pathParameters[name]!),
    httpMethod: body === undefined ? 'GET' : 'POST',
    headers: authorization ? { Authorization: authorization } : {},
    pathParameters,
    requestContext: { identity: { sourceIp: '198.51.100.10' } },
    body: body === undefined ? null : JSON.stringify(body),
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEvent;
}

/** What API Gateway's streaming integration receives: the prelude (status, headers), then the body bytes. */
function capturingStream() {
  const captured = { statusCode: 0, headers: {} as Record<string, unknown>, body: '' };
  const response = Object.assign(new EventEmitter(), {
    headersSent: false,
    writeHead(statusCode: number, headers: Record<string, unknown>) {
      Object.assign(captured, { statusCode, headers });
      this.headersSent = true;
    },
    flushHeaders() {},
    write(chunk: Buffer, done: () => void) {
      captured.body += chunk.toString('utf8');
      done();
    },
    end(done: () => void) {
      done();
    },
  });
  return { stream: new LocalResponseStream(response as unknown as ServerResponse), captured };
}

beforeAll(async () => {
  ({ twin, key } = await startPublishedTwin());
});
afterAll(() => twin.close());

describe('published handlers through the middy stack', () => {
  it('list-workflows answers 401 in the published error shape without a key, 200 with one', async () => {
    const { handler } = (await import('#published/handlers/list-workflows.ts')) as { handler: Handler };
    const refused = await handler(
      apiGatewayEvent('/api/v1/published/workflows', {}, undefined),
      localContext('PublishedListWorkflows', 29_000),
    );
    expect(refused.statusCode).toBe(401);
    expect(Object.keys(JSON.parse(refused.body))).toEqual(['detail']);
    const listed = await handler(
      apiGatewayEvent('/api/v1/published/workflows', {}, undefined, `Bearer ${key}`),
      localContext('PublishedListWorkflows', 29_000),
    );
    expect(listed.statusCode).toBe(200);
    expect(JSON.parse(listed.body).workflows.length).toBe(5);
  });

  it('execute is a response-streaming handler: the prelude carries status and headers, the body the result', async () => {
    const { handler } = (await import('#published/handlers/execute.ts')) as unknown as { handler: StreamingHandler };
    const { stream, captured } = capturingStream();
    const event = apiGatewayEvent(
      '/api/v1/published/workflows/{workflow_id}/execute',
      { workflow_id: 'echo' },
      { user_id: 'u', input: { message: 'streamed' } },
      `Bearer ${key}`,
    );
    await handler(event, stream, localContext('PublishedExecute', 60_000));
    expect(captured.statusCode).toBe(200);
    expect(captured.headers['content-type']).toBe('application/json');
    expect(JSON.parse(captured.body)).toMatchObject({ status: 'completed', output: 'Echo: streamed' });
  });

  it('execute ends its 200 document with an unsettled status and a poll_url when the execution outlives the request deadline', async () => {
    const { handler } = (await import('#published/handlers/execute.ts')) as unknown as { handler: StreamingHandler };
    const { stream, captured } = capturingStream();
    const event = apiGatewayEvent(
      '/api/v1/published/workflows/{workflow_id}/execute',
      { workflow_id: 'router' },
      { user_id: 'u', input: { kind: 'slow' } },
      `Bearer ${key}`,
    );
    await handler(event, stream, localContext('PublishedExecute', 2_500));
    expect(captured.statusCode).toBe(200);
    const body = JSON.parse(captured.body);
    // Queued or running: how far the execution got in 2.5 s depends on the machine, not on the handler.
    expect(['queued', 'running']).toContain(body.status);
    expect(body.poll_url).toBe(`/api/v1/published/executions/${body.execution_id}`);
  });
});
