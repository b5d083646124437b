import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SFNClient, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { GetCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionArnOf } from '#shared/execution-arn.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/stores.ts';
import { createKey, pollExecution, publishFixtures, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/** Runs that die outside their own path still end `failed`, with their callback. */
let twin: TestTwin;
let client: ReturnType<typeof publishedClient>;
let sfn: SFNClient;

const callbacks: { execution_id: string; status: string; error: string | null }[] = [];
const receiver: Server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    callbacks.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    response.writeHead(204).end();
  });
});
const callbackUrl = () => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

async function callbacksOf(executionId: string, count = 1) {
  for (let i = 0; i < 200 && callbacks.filter((body) => body.execution_id === executionId).length < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return callbacks.filter((body) => body.execution_id === executionId);
}

async function stored(executionId: string) {
  const result = await twin.dynamo.send(
    new GetCommand({ TableName: twin.twin.tables.executions, Key: { pk: `execution#${executionId}` }, ConsistentRead: true }),
  );
  return result.Item!;
}

/** The stored record once its callback delivery is recorded: the receiver sees the callback before the deliverer records it. */
async function settledCallback(executionId: string) {
  let item = await stored(executionId);
  for (let i = 0; i < 100 && item.callback_state === 'pending'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    item = await stored(executionId);
  }
  return item;
}

/** The id of a `router` run that is running and, with `minSteps` 2, inside its 30-second wait. */
async function runningRouterRun(minSteps: number): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const { Items } = await twin.dynamo.send(
      new ScanCommand({
        TableName: twin.twin.tables.executions,
        FilterExpression: 'workflow_id = :router AND #status = :running AND total_steps >= :steps',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':router': 'router', ':running': 'running', ':steps': minSteps },
      }),
    );
    if (Items?.[0]) return Items[0].execution_id as string;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no router run is running');
}

beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_CALLBACKS = '1';
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  twin = await startTestTwin({ retryIntervalMs: 50 });
  await publishFixtures(twin);
  client = publishedClient(twin, (await createKey(twin, 'full')).key);
  sfn = new SFNClient({ endpoint: twin.twin.step_functions_endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
});
afterAll(async () => {
  sfn?.destroy();
  receiver.close();
  await twin?.close();
});

describe('an execution whose execution is aborted from outside (the console)', () => {
  it('ends failed, naming the abort, answers the waiting execute with it, and delivers its callback', async () => {
    const blocking = client.execute('router', { user_id: 'u', input: { kind: 'slow' }, callback_url: callbackUrl() });
    const executionId = await runningRouterRun(2);

    await sfn.send(
      new StopExecutionCommand({
        executionArn: executionArnOf(twin.twin.state_machine_arn, executionId),
        error: 'OperatorAbort',
        cause: 'Aborted in the console',
      }),
    );

    const answered = await blocking;
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({
      execution_id: executionId,
      status: 'failed',
      error: 'The execution was aborted in Step Functions (OperatorAbort)',
    });
    expect(answered.body).not.toHaveProperty('poll_url');
    expect(await stored(executionId)).toMatchObject({ status: 'failed', pending_approval: null, task_token: null });
    const delivered = await callbacksOf(executionId);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ status: 'failed', error: 'The execution was aborted in Step Functions (OperatorAbort)' });
  });

  it('leaves an execution stopped through the API cancelled, with exactly one callback', async () => {
    const blocking = client.execute('router', { user_id: 'u', input: { kind: 'slow' }, callback_url: callbackUrl() });
    const running = await runningRouterRun(0);
    expect((await client.stop(running)).status).toBe(200);
    expect((await blocking).body).toMatchObject({ execution_id: running, status: 'cancelled' });
    const delivered = await callbacksOf(running);
    expect(delivered.map((body) => body.status)).toEqual(['cancelled']);
    // The aborted execution goes to the reconciler too, which never turns a cancelled run into a failed one.
    expect(await settledCallback(running)).toMatchObject({ status: 'cancelled', callback_state: 'delivered' });
  });
});

describe('an approval whose task token is gone', () => {
  it('answers 409 saying so, and fails the execution with its callback instead of leaving it running', async () => {
    const interrupted = await client.execute('gate', { user_id: 'u', input: { message: 'deploy' }, callback_url: callbackUrl() });
    expect(interrupted.body.status).toBe('interrupted');
    const executionId = interrupted.body.execution_id as string;
    const approvalId = interrupted.body.pending_approval.approval_id as string;
    await twin.dynamo.send(
      new UpdateCommand({
        TableName: twin.twin.tables.executions,
        Key: { pk: `execution#${executionId}` },
        UpdateExpression: 'SET task_token = :bogus',
        ExpressionAttributeValues: { ':bogus': 'AAAAKgAAAAIAAAAAAAAAAbogus-token-that-step-functions-never-issued' },
      }),
    );

    const approved = await client.approve(executionId, { feedback: 'ok' });
    expect(approved.status).toBe(409);
    expect(approved.body.detail).toMatch(
      new RegExp(`^Approval ${approvalId} can no longer be answered \\((TaskDoesNotExist|InvalidToken)\\); the execution has failed$`),
    );

    const polled = await client.getExecution(executionId);
    expect(polled.body).toMatchObject({ status: 'failed', pending_approval: null, finished_at: expect.any(String) });
    expect(polled.body.error).toMatch(/^The approval could not be delivered: /);
    expect(await stored(executionId)).toMatchObject({ status: 'failed', task_token: null, pending_approval: null });
    const delivered = await callbacksOf(executionId);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ status: 'failed', error: polled.body.error });

    const again = await client.approve(executionId);
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('is not waiting for an approval (status failed)');
  });

  it('still resumes the execution when the token is good (the claim and the send are unchanged)', async () => {
    const interrupted = await client.execute('gate', { user_id: 'u', input: { message: 'ship' } });
    const approved = await client.approve(interrupted.body.execution_id, { feedback: 'go' });
    expect(approved.status).toBe(200);
    const done = await pollExecution(client, interrupted.body.execution_id, (body) => body.status === 'completed');
    expect(done).toMatchObject({ status: 'completed', output: 'approved: go' });
  });
});
