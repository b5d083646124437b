import type { Writable } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientResponse } from '../support/client-response.ts';
import { localContext } from '#lib/twin/api-gateway-event.ts';
import { HeldResponseStream, LAMBDA_STREAM_HOLD_BYTES } from '#lib/twin/lambda-streaming.ts';
import type { EventStreamSettings } from '#published/event-stream-response.ts';
import { startPublishedTwin } from '../support/published.ts';
import { type TestTwin } from '../support/local-twin.ts';
import { openSse } from '../support/sse.ts';

/**
 * The SSE handler in this process with its heartbeat ten minutes away: nothing but the event's own write (and, where
 * the deployment pads, its filler) can get the event out before the next heartbeat. By default nothing holds it;
 * through a stream that holds small writes as Lambda is reported to, only the filler can.
 */
type StreamingHandler = (event: APIGatewayProxyEvent, stream: Writable, context: Context) => Promise<void>;

let twin: TestTwin;
let key: string;
let eventsWith: (paddingBytes: number) => StreamingHandler;
beforeAll(async () => {
  ({ twin, key } = await startPublishedTwin());
  const { followStreamRoute } = await import('#published/stream-route.ts');
  const { lifecycleStream } = await import('#executions/execution-streams.ts');
  const { streamTailFromEnv } = await import('#executions/wiring.ts');
  const { openStreamsFromEnv } = await import('#published/wiring.ts');
  eventsWith = (paddingBytes) => {
    const settings: EventStreamSettings = { heartbeatMs: 600_000, maxStreamMs: 600_000, slowReaderMs: 600_000, paddingBytes };
    return followStreamRoute(
      'PublishedExecutionEvents',
      streamTailFromEnv(),
      openStreamsFromEnv(),
      settings,
      lifecycleStream,
    ) as unknown as StreamingHandler;
  };
});
afterAll(() => twin?.close());

/** An execution in a ten-minute `wait` node: its log says nothing more for that long. */
async function waitingRun(): Promise<string> {
  const stream = await openSse(`${twin.url}/api/v1/published/workflows/router/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: { user_id: 'u', input: { kind: 'slow' }, overrides: { pause: { seconds: 600 } } },
  });
  await stream.waitFor((event) => event.event === 'node_update' && event.data.status === 'waiting');
  stream.close();
  return stream.events[0]!.data.execution_id as string;
}

/** The client's side, straight (the default) or behind a stream that holds small writes back as Lambda is reported to. */
function client(holdBytes = 0) {
  const { chunks, received, hangUp, toClient } = clientResponse();
  return { chunks, received, hangUp, stream: holdBytes > 0 ? new HeldResponseStream(toClient, holdBytes) : toClient };
}

function eventsRequest(executionId: string): APIGatewayProxyEvent {
  const path = `/api/v1/published/executions/${executionId}/events`;
  return {
    resource: '/api/v1/published/executions/{execution_id}/events',
    path,
    httpMethod: 'GET',
    headers: { Authorization: `Bearer ${key}` },
    pathParameters: { execution_id: executionId },
    requestContext: { path, identity: { sourceIp: '198.51.100.10' } },
    body: null,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEvent;
}

describe('an event reaches the client at once, not with the next heartbeat', () => {
  it('GET /executions/{id}/events sends the execution state on while the execution waits, with no filler by default', async () => {
    const executionId = await waitingRun();
    const { received, hangUp, stream, chunks } = client();

    const answered = eventsWith(0)(eventsRequest(executionId), stream, localContext('PublishedExecutionEvents', 900_000));
    await received('event: status');
    expect(chunks().join('')).toContain(`"execution_id":"${executionId}"`);
    // The opening comment and the event, nothing else: no filler.
    expect(chunks().join('')).toMatch(/^: keep-alive\n\nid: \d+\nevent: status\ndata: .+\n\n$/);
    hangUp();
    await answered;
  });

  it('behind a stream that holds 100 KiB, gets the execution state out with 100 KiB of padding after it', async () => {
    const executionId = await waitingRun();
    const { received, hangUp, stream, chunks } = client(LAMBDA_STREAM_HOLD_BYTES);

    const answered = eventsWith(LAMBDA_STREAM_HOLD_BYTES)(
      eventsRequest(executionId),
      stream,
      localContext('PublishedExecutionEvents', 900_000),
    );
    await received('event: status');
    expect(chunks().join('')).toContain(`"execution_id":"${executionId}"`);
    hangUp();
    await answered;
  });
});
