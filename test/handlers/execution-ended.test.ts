import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientResponse } from '../support/client-response.ts';
import { localContext } from '#lib/twin/api-gateway-event.ts';
import { installLambdaStreamingGlobals, type LocalResponseStream } from '#lib/twin/lambda-streaming.ts';
import { createKey, publishFixtures, publishedClient, pollExecution } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

type StreamingHandler = (event: APIGatewayProxyEvent, stream: LocalResponseStream, context: Context) => Promise<void>;
type TaskHandler = (event: unknown, context: Context) => Promise<any>;

let twin: TestTwin;
let key: string;
let execute: StreamingHandler;
let reconcile: TaskHandler;
const received: { status: string; execution_id: string; error: string | null }[] = [];
const receiver: Server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    response.writeHead(204).end();
  });
});
const callbackUrl = () => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

/** Starts an execution through the execute handler with a deadline of a few hundred ms: it answers while the execution waits. */
async function startWaitingRun(body: Record<string, unknown> = {}): Promise<string> {
  const client = clientResponse();
  const path = '/api/v1/published/workflows/router/execute';
  const event = {
    resource: '/api/v1/published/workflows/{workflow_id}/execute',
    path,
    httpMethod: 'POST',
    headers: { Authorization: `Bearer ${key}` },
    pathParameters: { workflow_id: 'router' },
    requestContext: { path, identity: { sourceIp: '198.51.100.10' } },
    body: JSON.stringify({ user_id: 'u', input: { kind: 'slow' }, ...body }),
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEvent;
  const deadline = Date.now() + 2_300;
  const context = { ...localContext('PublishedExecute', 2_300), getRemainingTimeInMillis: () => deadline - Date.now() };
  await execute(event, client.toClient, context);
  const document = JSON.parse(client.body());
  expect(['queued', 'running']).toContain(document.status);
  // Inside its 30-second wait: running, two steps taken.
  for (let i = 0; i < 200; i++) {
    const item = await stored(document.execution_id);
    if (item.status === 'running' && item.total_steps >= 2) return document.execution_id;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`run ${document.execution_id} never reached its wait`);
}

/** EventBridge's event for an execution of the twin's state machine that ended `status`. */
function statusChange(
  name: string,
  status: string,
  error: string | null = null,
  cause: string | null = null,
  stateMachineArn = twin.twin.state_machine_arn,
) {
  return {
    version: '0',
    id: 'a1b2c3',
    'detail-type': 'Step Functions Execution Status Change',
    source: 'aws.states',
    account: '000000000000',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [`${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`],
    detail: {
      executionArn: `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`,
      stateMachineArn,
      name,
      status,
      startDate: Date.now() - 1000,
      stopDate: Date.now(),
      input: '{}',
      output: null,
      error,
      cause,
    },
  };
}

async function stored(executionId: string) {
  const result = await twin.dynamo.send(
    new GetCommand({ TableName: twin.twin.tables.executions, Key: { pk: `execution#${executionId}` }, ConsistentRead: true }),
  );
  return result.Item!;
}

/** As if a delivery had died before it was recorded: the record says the callback is still pending. */
async function markCallbackPending(executionId: string): Promise<void> {
  await twin.dynamo.send(
    new UpdateCommand({
      TableName: twin.twin.tables.executions,
      Key: { pk: `execution#${executionId}` },
      UpdateExpression: 'SET callback_state = :pending',
      ExpressionAttributeValues: { ':pending': 'pending' },
    }),
  );
}

const context = () => localContext('WorkflowExecutionEnded', 30_000);

beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_CALLBACKS = '1';
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  installLambdaStreamingGlobals();
  twin = await startTestTwin({ retryIntervalMs: 50 });
  await publishFixtures(twin);
  key = (await createKey(twin, 'full')).key;
  const { createExecuteHandler } = await import('#published/handlers/execute.ts');
  const { executionStartFromEnv } = await import('#executions/wiring.ts');
  execute = createExecuteHandler(executionStartFromEnv(), {
    heartbeat: { intervalMs: 50, paddingBytes: 0 },
  }) as unknown as StreamingHandler;
  reconcile = (await import('#engine/handlers/execution-ended.ts')).handler;
});
afterAll(async () => {
  receiver.close();
  await twin?.close();
});

describe('the execution-ended reconciler, through the task middy stack', () => {
  it('fails an execution whose execution died while it was running, naming the Step Functions error, and starts its callback', async () => {
    const executionId = await startWaitingRun({ callback_url: callbackUrl() });
    const cause = "The state/task 'RunStep' returned a result with a size exceeding the maximum number of bytes service limit.";

    const result = await reconcile(statusChange(executionId, 'FAILED', 'States.DataLimitExceeded', cause), context());

    expect(result).toEqual({ execution_id: executionId, outcome: 'failed', callback_started: true });
    const record = await stored(executionId);
    expect(record).toMatchObject({ status: 'failed', pending_approval: null, task_token: null });
    expect(record.error).toBe(`The execution failed in Step Functions (States.DataLimitExceeded): ${cause}`);
    expect(record.finished_at).toEqual(expect.any(String));
    const client = publishedClient(twin, key);
    const polled = await pollExecution(client, executionId, (body) => body.status === 'failed');
    expect(polled.error).toBe(record.error);
    // The callback execution delivers the failed status to the execution's callback URL.
    for (let i = 0; i < 100 && !received.some((body) => body.execution_id === executionId); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(received.find((body) => body.execution_id === executionId)).toMatchObject({ status: 'failed', error: record.error });
    // The receiver sees the callback before the deliverer records it.
    for (let i = 0; i < 100 && (await stored(executionId)).callback_state !== 'delivered'; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await stored(executionId)).callback_state).toBe('delivered');
  });

  it('fails an aborted or timed-out run without a callback, and keeps a function’s own error report out of the record', async () => {
    const aborted = await startWaitingRun();
    expect(await reconcile(statusChange(aborted, 'ABORTED'), context())).toEqual({
      execution_id: aborted,
      outcome: 'failed',
      callback_started: false,
    });
    expect(await stored(aborted)).toMatchObject({ status: 'failed', error: 'The execution was aborted in Step Functions' });

    const timedOut = await startWaitingRun();
    await reconcile(statusChange(timedOut, 'TIMED_OUT', 'Lambda.Unknown', '{"errorMessage":"secret internals"}'), context());
    expect((await stored(timedOut)).error).toBe('The execution timed out in Step Functions (Lambda.Unknown)');
  });

  it('never overwrites an outcome: a cancelled run stays cancelled, a repeated event changes nothing', async () => {
    const executionId = await startWaitingRun();
    const stop = await publishedClient(twin, key).stop(executionId);
    expect(stop.status).toBe(200);
    expect(await reconcile(statusChange(executionId, 'ABORTED', 'Cancelled'), context())).toEqual({
      execution_id: executionId,
      outcome: 'unchanged',
    });
    expect(await stored(executionId)).toMatchObject({ status: 'cancelled', error: null });

    const failed = await startWaitingRun();
    await reconcile(statusChange(failed, 'FAILED', 'States.Runtime'), context());
    const before = await stored(failed);
    expect(await reconcile(statusChange(failed, 'FAILED', 'States.Runtime'), context())).toEqual({
      execution_id: failed,
      outcome: 'unchanged',
    });
    expect(await stored(failed)).toEqual(before);
  });

  it('abandons a pending callback whose delivery died, and leaves a delivered one alone', async () => {
    const client = publishedClient(twin, key);
    const done = await client.execute('echo', { user_id: 'u', input: { message: 'hi' }, callback_url: callbackUrl() });
    expect(done.body.status).toBe('completed');
    const executionId = done.body.execution_id as string;
    for (let i = 0; i < 100 && (await stored(executionId)).callback_state !== 'delivered'; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await reconcile(statusChange(`callback-${executionId}`, 'FAILED', 'States.Runtime'), context())).toEqual({
      execution_id: executionId,
      outcome: 'unchanged',
    });
    expect((await stored(executionId)).callback_state).toBe('delivered');

    // As if the delivery had died before it was recorded: the callback is pending, its execution failed.
    await markCallbackPending(executionId);
    expect(await reconcile(statusChange(`callback-${executionId}`, 'FAILED', 'States.Runtime'), context())).toEqual({
      execution_id: executionId,
      outcome: 'callback_abandoned',
    });
    expect(await stored(executionId)).toMatchObject({ status: 'completed', callback_state: 'abandoned' });

    // The execution's own execution failing in CallbackNotRecorded (GiveUpCallback could not write) ends it the same way.
    await markCallbackPending(executionId);
    expect(await reconcile(statusChange(executionId, 'FAILED', 'CallbackAbandoned'), context())).toMatchObject({
      outcome: 'callback_abandoned',
    });
    expect(await stored(executionId)).toMatchObject({ status: 'completed', callback_state: 'abandoned' });
  });

  it('ignores other state machines and other statuses, and refuses an event that is not a status change', async () => {
    const executionId = await startWaitingRun();
    const other = twin.twin.state_machine_arn.replace(/:[^:]+$/, ':someone-else');
    expect(await reconcile(statusChange(executionId, 'FAILED', null, null, other), context())).toEqual({ outcome: 'ignored' });
    // A collection sweep is an execution of the collection state machine: its rule never names the reconciler, and the
    // reconciler would not take it for an execution if it came.
    const collectionArn = twin.twin.collection_state_machine_arn;
    expect(
      await reconcile(statusChange(`collect-tsk_1-${executionId}`, 'FAILED', 'States.TaskFailed', null, collectionArn), context()),
    ).toEqual({ outcome: 'ignored' });
    expect(await reconcile(statusChange(executionId, 'SUCCEEDED'), context())).toEqual({ outcome: 'ignored' });
    expect((await stored(executionId)).status).toBe('running');
    await expect(reconcile({ 'detail-type': 'Something else', source: 'aws.states', detail: {} }, context())).rejects.toMatchObject({
      name: 'ZodError',
    });
  });
});
