import type { Writable } from 'node:stream';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientResponse } from '../support/client-response.ts';
import { localContext } from '#lib/twin/api-gateway-event.ts';
import { HeldResponseStream, installLambdaStreamingGlobals, LAMBDA_STREAM_HOLD_BYTES } from '#lib/twin/lambda-streaming.ts';
import { startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';

type StreamingHandler = (event: APIGatewayProxyEvent, stream: Writable, context: Context) => Promise<void>;

let twin: TestTwin;
let key: string;
let execute: StreamingHandler;
/** The same route where the deployment pads its streamed writes past a 100 KiB hold. */
let paddedExecute: StreamingHandler;

const RESOURCE = '/api/v1/published/workflows/{workflow_id}/execute';

/** The proxy event API Gateway sends for a call through the `prod` stage of api.example.com. */
function executeEvent(workflowId: string, body: unknown, authorization: string | null = `Bearer ${key}`) {
  const path = `/api/v1/published/workflows/${workflowId}/execute`;
  return {
    resource: RESOURCE,
    path,
    httpMethod: 'POST',
    headers: { Host: 'api.example.com', 'X-Forwarded-Proto': 'https', ...(authorization ? { Authorization: authorization } : {}) },
    pathParameters: { workflow_id: workflowId },
    requestContext: { path: `/prod${path}`, stage: 'prod', identity: { sourceIp: '198.51.100.10' } },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEvent;
}

/**
 * What API Gateway's streaming integration receives, in order: the prelude (status, headers), then each body chunk,
 * straight (by default) or through a stream that holds small writes back as Lambda is reported to.
 */
function capturingStream(holdBytes = 0) {
  const { log, head, body, toClient } = clientResponse();
  return { stream: holdBytes > 0 ? new HeldResponseStream(toClient, holdBytes) : toClient, captured: Object.assign(head, { log }), body };
}

/** A Lambda context whose deadline is `remainingMs` away: the handler keeps 2 s of it to end the document. */
function contextWithRemaining(remainingMs: number): Context {
  const deadline = Date.now() + remainingMs;
  return { ...localContext('PublishedExecute', remainingMs), getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) };
}

async function run(event: APIGatewayProxyEvent, context: Context, handler = execute, holdBytes = 0) {
  const { stream, captured, body } = capturingStream(holdBytes);
  await handler(event, stream, context);
  return { captured, text: body() };
}

beforeAll(async () => {
  installLambdaStreamingGlobals();
  ({ twin, key } = await startPublishedTwin());
  const { createExecuteHandler } = await import('#published/handlers/execute.ts');
  const { executionStartFromEnv } = await import('#executions/wiring.ts');
  execute = createExecuteHandler(executionStartFromEnv(), {
    heartbeat: { intervalMs: 20, paddingBytes: 0 },
  }) as unknown as StreamingHandler;
  paddedExecute = createExecuteHandler(executionStartFromEnv(), {
    heartbeat: { intervalMs: 20, paddingBytes: LAMBDA_STREAM_HOLD_BYTES },
  }) as unknown as StreamingHandler;
});
afterAll(() => twin?.close());

describe('blocking execute through the middy stack, as a response stream', () => {
  it('sends 200 and application/json at once, whitespace while the execution goes on, then the running status and a poll URL with the stage', async () => {
    // 3 s to wait, then the 2 s margin: the execution is in its 30-second wait by then, even when the step function's
    // cold start on a loaded machine takes a second or two.
    const { captured, text } = await run(executeEvent('router', { user_id: 'u', input: { kind: 'slow' } }), contextWithRemaining(5_000));

    expect(captured.statusCode).toBe(200);
    expect(captured.headers['content-type']).toBe('application/json');
    // The status line went out first, with a single space (no padding by default), long before the document.
    expect(captured.log[0]!.kind).toBe('head');
    expect(captured.log[1]!.text).toBe(' ');
    const chunks = captured.log.filter((entry) => entry.kind === 'chunk');
    const heartbeats = chunks.slice(0, -1);
    expect(heartbeats.length).toBeGreaterThanOrEqual(3);
    for (const heartbeat of heartbeats) expect(heartbeat.text).toBe(' ');

    const document = JSON.parse(text);
    expect(text.trimStart().startsWith('{')).toBe(true);
    // Still going when the deadline came: running, or still queued where a loaded machine's cold start of the step
    // function took longer than the 3 s (the answer says which, and is never a finished run).
    expect(document).toMatchObject({ workflow_id: 'router', output: null, error: null });
    expect(['queued', 'running']).toContain(document.status);
    expect(document.poll_url).toBe(`https://api.example.com/prod/api/v1/published/executions/${document.execution_id}`);
    // The execution goes on in Step Functions: the table says so too (running by now, or still queued as answered).
    const stored = await twin.dynamo.send(
      new GetCommand({ TableName: twin.twin.tables.executions, Key: { pk: `execution#${document.execution_id}` }, ConsistentRead: true }),
    );
    expect(document.status === 'running' ? ['running'] : ['queued', 'running']).toContain(stored.Item?.status);
  });

  it('with padding set, gets the status and each heartbeat past a 100 KiB hold: each is that much whitespace', async () => {
    const { captured, text } = await run(
      executeEvent('router', { user_id: 'u', input: { kind: 'slow' } }),
      contextWithRemaining(5_000),
      paddedExecute,
      LAMBDA_STREAM_HOLD_BYTES,
    );

    expect(captured.statusCode).toBe(200);
    expect(captured.log[0]!.kind).toBe('head');
    const chunks = captured.log.filter((entry) => entry.kind === 'chunk');
    // Nothing was held back to the end: each heartbeat reached the client on its own, then the document.
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    for (const heartbeat of chunks.slice(0, -1)) expect(heartbeat.text).toMatch(new RegExp(`^ {${LAMBDA_STREAM_HOLD_BYTES}}$`));
    expect(JSON.parse(text)).toMatchObject({ status: 'running', workflow_id: 'router' });
  });

  it('ends the document with the settled record, without a poll URL, when the execution finishes in time', async () => {
    const { captured, text } = await run(
      executeEvent('echo', { user_id: 'u', input: { message: 'streamed' } }),
      contextWithRemaining(60_000),
    );
    expect(captured.statusCode).toBe(200);
    const document = JSON.parse(text);
    expect(document).toMatchObject({ status: 'completed', output: 'Echo: streamed' });
    expect(document).not.toHaveProperty('poll_url');
  });

  it('answers refusals before the execution starts as ordinary JSON errors with their own status and nothing else in the body', async () => {
    const missingKey = await run(executeEvent('echo', { user_id: 'u' }, null), contextWithRemaining(60_000));
    expect(missingKey.captured.statusCode).toBe(401);
    expect(JSON.parse(missingKey.text)).toEqual({ detail: expect.stringContaining('Authorization') });
    expect(missingKey.text.startsWith('{')).toBe(true);

    const unknownWorkflow = await run(executeEvent('no-such-workflow', { user_id: 'u' }), contextWithRemaining(60_000));
    expect(unknownWorkflow.captured.statusCode).toBe(404);
    expect(unknownWorkflow.captured.headers['content-type']).toBe('application/json');
    expect(unknownWorkflow.text.startsWith('{')).toBe(true);

    const invalid = await run(executeEvent('echo', { input: { message: 'no user' } }), contextWithRemaining(60_000));
    expect(invalid.captured.statusCode).toBe(400);
    expect(JSON.parse(invalid.text).detail).toContain('user_id');
  });
});
