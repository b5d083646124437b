import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionArnOf } from '#shared/execution-arn.ts';
import { MAX_EXECUTION_RESULT_BYTES, EXECUTION_VALUE_INLINE_MAX_BYTES } from '#shared/limits.ts';
import { createKey, pollExecution, publishedClient, WORKFLOW_FIXTURES } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * Runs whose input plus node outputs come to several MB: the Step Functions state carries ids and a cursor,
 * the values live in the executions table and, past EXECUTION_VALUE_INLINE_MAX_BYTES, in S3 under `executions/`.
 */
const LARGE_CHAIN = {
  id: 'large-chain',
  name: 'Large chain',
  description: 'Grows a ~100 KB input to MB-sized node outputs, with a pause in between',
  start: 'a',
  nodes: {
    a: { type: 'llm', provider: 'scripted', reply: '{{input.text}}'.repeat(4), next: 'b' },
    b: { type: 'llm', provider: 'scripted', reply: '{{nodes.a.output}}'.repeat(4), next: 'pause' },
    pause: { type: 'wait', seconds: 1, next: 'c' },
    c: { type: 'llm', provider: 'scripted', reply: '{{nodes.b.output}}{{nodes.a.output}}', next: 'route' },
    route: { type: 'condition', cases: [{ if: 'input.fail = true', next: 'boom' }], else: 'done' },
    boom: { type: 'fail', error: '{{nodes.b.output}}' },
    done: { type: 'end', output: '{{nodes.c.output}}' },
  },
};

const LARGE_APPROVAL = {
  id: 'large-approval',
  name: 'Large approval',
  description: 'An approval whose message is hundreds of KB',
  start: 'a',
  nodes: {
    a: { type: 'llm', provider: 'scripted', reply: '{{input.text}}'.repeat(4), next: 'ask' },
    ask: { type: 'approval', message: 'Send this? {{nodes.a.output}}', next: 'done' },
    done: { type: 'end', output: '{{approval.feedback}}:{{nodes.a.output}}' },
  },
};

/** Non-ASCII, quotes and backslashes: JSON escaping and UTF-8 both make bytes differ from characters. */
const PATTERN = 'abcжй"\\ ';
const TEXT = PATTERN.repeat(9000);
const A = TEXT.repeat(4);
const B = A.repeat(4);
const C = B + A;

let twin: TestTwin;
let client: ReturnType<typeof publishedClient>;
let fixtures: string;
const callbacks: string[] = [];
const receiver: Server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    callbacks.push(Buffer.concat(chunks).toString('utf8'));
    response.writeHead(204).end();
  });
});

beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_CALLBACKS = '1';
  twin = await startTestTwin({ retryIntervalMs: 50 });
  fixtures = mkdtempSync(join(tmpdir(), 'large-workflows-'));
  for (const file of readdirSync(WORKFLOW_FIXTURES)) copyFileSync(join(WORKFLOW_FIXTURES, file), join(fixtures, file));
  writeFileSync(join(fixtures, 'large-chain.json'), JSON.stringify(LARGE_CHAIN));
  writeFileSync(join(fixtures, 'large-approval.json'), JSON.stringify(LARGE_APPROVAL));
  await twin.admin('publish', fixtures, '--project', 'default');
  client = publishedClient(twin, (await createKey(twin, 'full')).key);
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
});
afterAll(async () => {
  receiver.close();
  await twin?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

const utf8 = (value: unknown) => Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value), 'utf8');

async function executionItem(executionId: string) {
  const { Item } = await twin.dynamo.send(
    new GetCommand({ TableName: twin.twin.tables.executions, Key: { pk: `execution#${executionId}` } }),
  );
  return Item!;
}

async function objectText(key: string): Promise<string> {
  const object = await twin.s3.send(new GetObjectCommand({ Bucket: twin.twin.bucket, Key: key }));
  return object.Body!.transformToString('utf8');
}

async function objectKeys(executionId: string): Promise<string[]> {
  const listed = await twin.s3.send(new ListObjectsV2Command({ Bucket: twin.twin.bucket, Prefix: `executions/${executionId}/` }));
  return (listed.Contents ?? []).map((object) => object.Key!).sort();
}

/** The execution's input as Step Functions holds it: ids and a cursor, whatever the caller sent. */
function stateMachineInput(executionId: string): string {
  return twin.stepFunctions.describeExecution(executionArnOf(twin.twin.state_machine_arn, executionId)).input;
}

describe('a run of several MB', () => {
  it('completes, answers the whole output on execute, GET and the callback, and keeps items small and large values in S3', async () => {
    const body = JSON.stringify({
      user_id: 'big',
      input: { text: TEXT },
      callback_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
    });
    expect(utf8(body)).toBeGreaterThan(100_000);
    expect(utf8(TEXT) + utf8(A) + utf8(B) + utf8(C)).toBeGreaterThan(3.5 * 1024 * 1024);

    const run = await client.call('POST', '/workflows/large-chain/execute', body);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'completed', error: null, total_steps: 6 });
    expect(run.body.output).toBe(C);
    const id = run.body.execution_id as string;

    const polled = await client.getExecution(id);
    expect(polled.status).toBe(200);
    expect(polled.body).toEqual(run.body);
    await pollExecution(client, id, () => callbacks.length > 0);
    expect(JSON.parse(callbacks[0]!)).toEqual(run.body);

    // The status item stays a few KB: the input is in the execution item, the output in S3.
    const item = await executionItem(id);
    expect(utf8(item)).toBeLessThan(8 * 1024);
    expect(item).not.toHaveProperty('input');
    expect(item.output_s3).toBe(`executions/${id}/output.json`);
    expect(JSON.parse(await objectText(item.output_s3))).toBe(C);
    // Execution context (~100 KB), node outputs at the pause, the output, and the long history turns.
    expect(await objectKeys(id)).toEqual(
      [`context`, `outputs-1`, `output`, `turn-1`, `turn-2`, `turn-3`].map((name) => `executions/${id}/${name}.json`).sort(),
    );
    const stored = await executionItemsOf(id);
    for (const each of stored) expect(utf8(each), each.pk).toBeLessThan(EXECUTION_VALUE_INLINE_MAX_BYTES + 1024);

    // Step Functions only ever saw ids and a cursor.
    expect(utf8(stateMachineInput(id))).toBeLessThan(4 * 1024);
    expect(JSON.parse(stateMachineInput(id))).toEqual({
      mode: 'run',
      execution_id: id,
      cursor: { node: 'a', steps: 0, turns: 0, outputs: 0, approval_node: null },
    });
    const description = twin.stepFunctions.describeExecution(executionArnOf(twin.twin.state_machine_arn, id));
    expect(description.status).toBe('SUCCEEDED');
    expect(utf8(description.output ?? '')).toBeLessThan(4 * 1024);
  });

  it('records a fail node error of MB whole, in S3', async () => {
    const run = await client.execute('large-chain', { user_id: 'big', input: { text: TEXT, fail: true } });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'failed', output: null });
    expect(run.body.error).toBe(B);
    expect((await client.getExecution(run.body.execution_id)).body.error).toBe(B);
    const item = await executionItem(run.body.execution_id);
    expect(item.error).toBeNull();
    expect(item.error_s3).toBe(`executions/${run.body.execution_id}/error.json`);
  });

  it(`fails an execution whose output would pass ${MAX_EXECUTION_RESULT_BYTES} bytes, saying so`, async () => {
    const run = await client.execute('large-chain', {
      user_id: 'big',
      input: { text: TEXT },
      overrides: { done: { output: '{{nodes.c.output}}{{nodes.b.output}}' } },
    });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'failed', output: null });
    expect(run.body.error).toContain(`The output of done is ${utf8(JSON.stringify(C + B))} bytes of JSON`);
    expect(run.body.error).toContain(`at most ${MAX_EXECUTION_RESULT_BYTES} bytes`);
  });

  it('interrupts with an approval message of hundreds of KB kept in S3, and completes after approve', async () => {
    const run = await client.execute('large-approval', { user_id: 'big', input: { text: TEXT } });
    expect(run.status).toBe(200);
    expect(run.body.status).toBe('interrupted');
    expect(run.body.pending_approval).toEqual({ approval_id: expect.any(String), node_id: 'ask', message: `Send this? ${A}` });
    const id = run.body.execution_id as string;
    expect((await client.getExecution(id)).body.pending_approval).toEqual(run.body.pending_approval);

    const item = await executionItem(id);
    expect(utf8(item)).toBeLessThan(8 * 1024);
    expect(item.pending_approval).toEqual({
      approval_id: run.body.pending_approval.approval_id,
      node_id: 'ask',
      message: null,
      message_s3: `executions/${id}/approval-${run.body.pending_approval.approval_id}.json`,
    });
    expect(JSON.parse(await objectText(item.pending_approval.message_s3))).toBe(`Send this? ${A}`);

    // What AwaitApproval received from the state: ids only.
    const approved = await client.approve(id, { feedback: 'yes' });
    expect(approved.status).toBe(200);
    const done = await pollExecution(client, id, (body) => body.status === 'completed');
    expect(done.output).toBe(`yes:${A}`);
    expect(utf8(stateMachineInput(id))).toBeLessThan(4 * 1024);
  });
});

async function executionItemsOf(executionId: string) {
  const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.executions }));
  return (Items ?? []).filter((item) => String(item.pk).includes(executionId));
}

describe('ids at the limits of the API', () => {
  const userId = 'ж'.repeat(256);
  const threadId = '𝄞'.repeat(128);

  it('runs with a 256-character non-ASCII user_id and thread_id, initial_memory included, and reads them back next run', async () => {
    const first = await client.execute('memory', {
      user_id: userId,
      thread_id: threadId,
      initial_memory: { name: 'Аня' },
      input: { message: 'first question', topic: 'billing' },
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'completed', thread_id: threadId });
    expect(first.body.output).toEqual({ reply: 'Hello Аня, topic was []. History: []', topic: 'billing' });

    const second = await client.execute('memory', { user_id: userId, thread_id: threadId, input: { message: 'second question' } });
    expect(second.body.status).toBe('completed');
    expect(second.body.output.topic).toBe('billing');
    expect(second.body.output.reply).toContain('Hello Аня, topic was [billing]');
    expect(second.body.output.reply).toContain('user: first question\nassistant: Hello Аня, topic was []. History: []');

    // A different user whose id shares the first 255 characters sees nothing of it.
    const other = await client.execute('memory', { user_id: `${'ж'.repeat(255)}и`, thread_id: threadId, input: { message: 'who' } });
    expect(other.body.output).toEqual({ reply: 'Hello , topic was []. History: []', topic: '' });

    const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.userState }));
    expect(Items!.length).toBeGreaterThan(0);
    for (const item of Items!) {
      expect(utf8(item.pk)).toBeLessThanOrEqual(2048);
      expect(utf8(item.sk)).toBeLessThanOrEqual(1024);
    }
    const memory = Items!.filter((item) => item.name === 'name' && JSON.parse(item.value_json) === 'Аня');
    expect(memory).toHaveLength(1);
    expect(memory[0]!.sk).toBe('key#name');
  });
});
