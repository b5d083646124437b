import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { executionArnOf } from '#shared/execution-arn.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, pollExecution, publishFixtures, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

let twin: TestTwin;
let client: ReturnType<typeof publishedClient>;
beforeAll(async () => {
  twin = await startTestTwin();
  await publishFixtures(twin);
  client = publishedClient(twin, (await createKey(twin, 'full')).key);
});
afterAll(() => twin?.close());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function storedExecution(executionId: string) {
  const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.executions }));
  return Items?.find((item) => item.execution_id === executionId);
}

describe('POST /workflows/{id}/execute', () => {
  it('blocks until completed and answers every field of the execution result', async () => {
    const response = await client.execute('echo', { user_id: 'user-1', thread_id: 'thread-1', input: { message: 'hello world' } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      execution_id: expect.stringMatching(UUID),
      thread_id: 'thread-1',
      workflow_id: 'echo',
      status: 'completed',
      output: 'Echo: hello world',
      error: null,
      elapsed_time: expect.any(Number),
      total_steps: 2,
      created_at: expect.stringMatching(ISO),
      finished_at: expect.stringMatching(ISO),
      pending_approval: null,
      usage: { model_calls: 1, input_tokens: 0, output_tokens: 3, tool_calls: 0, images: 0 },
    });
    expect(response.body.elapsed_time).toBeGreaterThan(0);
    expect(response.body.elapsed_time).toBe((Date.parse(response.body.finished_at) - Date.parse(response.body.created_at)) / 1000);
    const polled = await client.getExecution(response.body.execution_id);
    expect(polled.status).toBe(200);
    expect(polled.body).toEqual(response.body);
    const stored = await storedExecution(response.body.execution_id);
    expect(stored).toMatchObject({ status: 'completed', project_id: 'default', user_id: 'user-1', task_token: null });
  });

  it('generates a thread_id when the request has none', async () => {
    const response = await client.execute('echo', { user_id: 'user-1', input: { message: 'x' } });
    expect(response.body.thread_id).toMatch(UUID);
  });

  it('follows conditions and returns a failed run with its error', async () => {
    const refund = await client.execute('router', { user_id: 'u', input: { kind: 'refund' } });
    expect(refund.body).toMatchObject({ status: 'completed', output: 'refund handled', total_steps: 2 });
    const other = await client.execute('router', { user_id: 'u', input: { kind: 'question' } });
    expect(other.body).toMatchObject({ status: 'completed', output: 'other: question' });

    const failed = await client.execute('router', { user_id: 'u', input: { kind: 'broken', message: 'the disk' } });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: 'failed', error: 'Broken: the disk', output: null, total_steps: 2 });
    expect(failed.body.finished_at).toMatch(ISO);
  });

  it('stops at an approval as interrupted with pending_approval, and approve follows the approved edge', async () => {
    const run = await client.execute('support-bot', { user_id: 'u', input: { message: 'refund me' } });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'interrupted', output: null, error: null, total_steps: 2, finished_at: null });
    expect(run.body.pending_approval).toEqual({
      approval_id: expect.any(String),
      message: 'Send You said: refund me?',
      node_id: 'confirm',
    });
    const id = run.body.execution_id;
    expect((await client.getExecution(id)).body.pending_approval).toEqual(run.body.pending_approval);

    const approved = await client.approve(id, { feedback: 'looks good' });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ execution_id: id, approval_id: run.body.pending_approval.approval_id, decision: 'approved' });
    const done = await pollExecution(client, id, (body) => body.status === 'completed');
    expect(done).toMatchObject({ status: 'completed', output: 'You said: refund me', total_steps: 3, pending_approval: null });

    const again = await client.approve(id, { feedback: 'twice' });
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('not waiting');
  });

  it('reject follows the rejected edge with the feedback', async () => {
    const run = await client.execute('support-bot', { user_id: 'u', input: { message: 'hi' } });
    const rejected = await client.reject(run.body.execution_id, { feedback: 'too rude' });
    expect(rejected.status).toBe(200);
    const done = await pollExecution(client, run.body.execution_id, (body) => body.status !== 'running');
    expect(done).toMatchObject({ status: 'completed', output: 'Cancelled: too rude' });
  });

  it('reject without a rejected edge fails the execution with the feedback as its error', async () => {
    const run = await client.execute('gate', { user_id: 'u', input: { message: 'deploy' } });
    expect(run.body.pending_approval.message).toBe('Proceed with deploy?');
    await client.reject(run.body.execution_id, { feedback: 'not today' });
    const done = await pollExecution(client, run.body.execution_id, (body) => body.status !== 'running');
    expect(done).toMatchObject({ status: 'failed', error: 'not today', output: null });
  });

  it('approve without feedback works and an empty {feedback} renders as empty text', async () => {
    const run = await client.execute('gate', { user_id: 'u', input: { message: 'x' } });
    expect((await client.approve(run.body.execution_id)).status).toBe(200);
    const done = await pollExecution(client, run.body.execution_id, (body) => body.status !== 'running');
    expect(done).toMatchObject({ status: 'completed', output: 'approved: ' });
  });

  it('answers 409 to approving or rejecting an execution that is not waiting, and 400 to bad feedback', async () => {
    const run = await client.execute('echo', { user_id: 'u', input: { message: 'x' } });
    expect((await client.approve(run.body.execution_id, { feedback: 'x' })).status).toBe(409);
    expect((await client.reject(run.body.execution_id, { feedback: 'x' })).status).toBe(409);
    const waiting = await client.execute('gate', { user_id: 'u', input: {} });
    const bad = await client.approve(waiting.body.execution_id, { feedback: 42 });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain('feedback');
    const notJson = await client.reject(waiting.body.execution_id, '{feedback');
    expect(notJson.status).toBe(400);
    expect(notJson.body).toEqual({ detail: 'Validation error: body: is not valid JSON' });
    expect((await client.getExecution(waiting.body.execution_id)).body.status).toBe('interrupted');
  });

  it('answers one of two parallel approvals and 409 to the other', async () => {
    const run = await client.execute('gate', { user_id: 'u', input: {} });
    const answers = await Promise.all([client.approve(run.body.execution_id, {}), client.reject(run.body.execution_id, {})]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
  });
});

describe('stop', () => {
  it('cancels an execution in a wait; the blocked execute answers cancelled; a second stop is 409', async () => {
    const blocked = client.execute('router', { user_id: 'stopper', input: { kind: 'slow' } });
    let stored: Record<string, any> | undefined;
    for (let i = 0; i < 100 && !stored; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.executions }));
      stored = Items?.find((item) => item.user_id === 'stopper' && item.status === 'running' && item.total_steps === 2);
    }
    expect(stored).toBeDefined();
    const id = stored!.execution_id as string;
    expect((await client.getExecution(id)).body.status).toBe('running');

    const stopped = await client.stop(id);
    expect(stopped.status).toBe(200);
    expect(stopped.body).toEqual({ execution_id: id, status: 'cancelled' });

    const answer = await blocked;
    expect(answer.body).toMatchObject({ execution_id: id, status: 'cancelled' });
    const polled = await client.getExecution(id);
    expect(polled.body).toMatchObject({ status: 'cancelled', output: null, finished_at: expect.stringMatching(ISO) });
    expect(twin.stepFunctions.describeExecution(executionArnOf(twin.twin.state_machine_arn, id)).status).toBe('ABORTED');

    const again = await client.stop(id);
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('cancelled');
  });

  it("keeps a stopped run's message in its thread but not the reply its model went on to write", async () => {
    // The scripted model answers slowly: the stop comes while the step function is still generating.
    const blocked = client.execute('echo', {
      user_id: 'reply-stopper',
      thread_id: 'stopped-thread',
      input: { message: 'hello' },
      overrides: { answer: { reply: 'one two three four five', token_delay_ms: 150 } },
    });
    let stored: Record<string, any> | undefined;
    for (let i = 0; i < 100 && !stored; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.executions }));
      stored = Items?.find((item) => item.user_id === 'reply-stopper' && item.status === 'running');
    }
    expect(stored).toBeDefined();
    expect((await client.stop(stored!.execution_id as string)).status).toBe(200);
    expect((await blocked).body).toMatchObject({ status: 'cancelled' });
    // The step function finishes its model call, writes the reply, finds the execution cancelled and takes the reply back.
    await twin.settled(['WorkflowStep']);

    const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.userState }));
    const turns = (Items ?? []).filter((item) => String(item.pk).includes('reply-stopper')).map((item) => [item.role, item.text]);
    expect(turns).toEqual([['user', 'hello']]);
  });

  it('answers 409 for completed and interrupted runs and 404 for unknown ones', async () => {
    const done = await client.execute('echo', { user_id: 'u', input: { message: 'x' } });
    expect((await client.stop(done.body.execution_id)).status).toBe(409);
    const waiting = await client.execute('gate', { user_id: 'u', input: {} });
    expect((await client.stop(waiting.body.execution_id)).status).toBe(409);
    expect((await client.stop('nope')).status).toBe(404);
    expect((await client.getExecution('nope')).status).toBe(404);
  });
});

describe('memory and history', () => {
  it('pre-fills memory, shares history on a thread, and keeps users apart', async () => {
    const first = await client.execute('memory', {
      user_id: 'ann',
      thread_id: 't1',
      initial_memory: { name: 'Ann' },
      input: { message: 'first question', topic: 'billing' },
    });
    expect(first.body.status).toBe('completed');
    expect(first.body.output).toEqual({ reply: 'Hello Ann, topic was []. History: []', topic: 'billing' });
    expect(first.body.total_steps).toBe(4);

    const second = await client.execute('memory', { user_id: 'ann', thread_id: 't1', input: { message: 'second question' } });
    expect(second.body.output.topic).toBe('billing');
    expect(second.body.output.reply).toContain('Hello Ann, topic was [billing]');
    expect(second.body.output.reply).toContain('user: first question\nassistant: Hello Ann, topic was []. History: []');

    const otherThread = await client.execute('memory', { user_id: 'ann', thread_id: 't2', input: { message: 'new thread' } });
    expect(otherThread.body.output.reply).toBe('Hello Ann, topic was [billing]. History: []');

    const bob = await client.execute('memory', { user_id: 'bob', thread_id: 't1', input: { message: 'who am I' } });
    expect(bob.body.output).toEqual({ reply: 'Hello , topic was []. History: []', topic: '' });
  });
});

describe('overrides and validation', () => {
  it('replaces node params for one execution only', async () => {
    const overridden = await client.execute('echo', {
      user_id: 'u',
      input: { message: 'x' },
      overrides: { answer: { reply: 'Overridden {{input.message}}' } },
    });
    expect(overridden.body.output).toBe('Overridden x');
    const plain = await client.execute('echo', { user_id: 'u', input: { message: 'x' } });
    expect(plain.body.output).toBe('Echo: x');
  });

  it('answers 400 naming an unknown node, an unknown param or a bad value', async () => {
    const unknownNode = await client.execute('echo', { user_id: 'u', overrides: { ghost: { reply: 'x' } } });
    expect(unknownNode.status).toBe(400);
    expect(unknownNode.body.detail).toContain('overrides.ghost');
    const unknownParam = await client.execute('echo', { user_id: 'u', overrides: { answer: { next: 'done' } } });
    expect(unknownParam.status).toBe(400);
    expect(unknownParam.body.detail).toContain('overrides.answer.next');
    const badValue = await client.execute('router', { user_id: 'u', overrides: { pause: { seconds: -1 } } });
    expect(badValue.status).toBe(400);
    expect(badValue.body.detail).toContain('overrides.pause.seconds');
  });

  it('answers 400 with detail for bad bodies, and 404 for unknown workflows', async () => {
    const cases: [unknown, string][] = [
      [{}, 'user_id'],
      [{ user_id: 5 }, 'user_id'],
      [{ user_id: 'u', input: 'text' }, 'input'],
      [{ user_id: 'u', input: { message: 7 } }, 'input.message'],
      [{ user_id: 'u', callback_url: 'https://10.0.0.1/hook' }, 'callback_url'],
      [{ user_id: 'u', callback_url: 'http://example.com/hook' }, 'callback_url'],
      [{ user_id: 'u', webhook_secret: 'abc' }, 'webhook_secret'],
      [{ user_id: '' }, 'user_id'],
      [{ user_id: 'u', thread_id: 't'.repeat(257) }, 'thread_id'],
      [{ user_id: 'u', callback_url: `https://hooks.example.com/${'x'.repeat(2100)}` }, 'callback_url'],
      [{ user_id: 'u', overrides: { answer: 'reply' } }, 'overrides.answer'],
      ['{not json', 'body'],
      [[1, 2], 'body'],
    ];
    for (const [body, field] of cases) {
      const response = await client.execute('echo', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.detail, JSON.stringify(body)).toContain(field);
    }
    const unknown = await client.execute('ghost', { user_id: 'u' });
    expect(unknown.status).toBe(404);
  });

  it('answers 413 for a body over the execute limit', async () => {
    const response = await client.execute('echo', { user_id: 'u', input: { message: 'x'.repeat(200 * 1024) } });
    expect(response.status).toBe(413);
    expect(typeof response.body.detail).toBe('string');
  });
});
