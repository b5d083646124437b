import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FaultPlan } from '#lib/twin/faults.ts';
import { executionArnOf } from '#shared/execution-arn.ts';
import { http } from '../support/http.ts';
import { createKey, pollExecution, publishedClient, WORKFLOW_FIXTURES } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { openSse, type SseEvent } from '../support/sse.ts';

/**
 * Decisions racing stops, and decisions retried after their answer was lost, on the twin: a 200 to approve means the
 * decision applied (its event is in the execution's log before any cancellation, and the state machine execution ends as
 * the record says), and the same approve sent again after a lost answer gets that 200 again.
 */
let twin: TestTwin;
let key: string;
let client: ReturnType<typeof publishedClient>;
// Every rate starts at 0; the crash test turns one on for one request.
const plan = new FaultPlan(20_260_401);
/** An approval, then a wait in which the execution is running (a stop then cancels it), then the end. */
const APPROVE_THEN_WAIT = {
  id: 'approve-then-wait',
  name: 'Approve, then wait',
  description: 'Runs on for a while after its approval',
  start: 'ask',
  nodes: {
    ask: { type: 'approval', message: 'Go on?', next: 'hold' },
    hold: { type: 'wait', seconds: 60, next: 'done' },
    done: { type: 'end', output: 'approved: {{approval.feedback}}' },
  },
};
let workflows: string;
beforeAll(async () => {
  twin = await startTestTwin({ faults: plan });
  workflows = mkdtempSync(join(tmpdir(), 'approval-races-'));
  copyFileSync(join(WORKFLOW_FIXTURES, 'gate.json'), join(workflows, 'gate.json'));
  writeFileSync(join(workflows, 'approve-then-wait.json'), JSON.stringify(APPROVE_THEN_WAIT));
  await twin.admin('publish', workflows);
  key = (await createKey(twin, 'full')).key;
  client = publishedClient(twin, key);
});
afterAll(async () => {
  await twin?.close();
  if (workflows) rmSync(workflows, { recursive: true, force: true });
});

/** The gate workflow (or another) waiting at its approval. */
async function waitingExecution(user: string, workflowId = 'gate'): Promise<string> {
  const run = await client.execute(workflowId, { user_id: user, input: { message: user } });
  expect(run.body).toMatchObject({ status: 'interrupted' });
  return run.body.execution_id as string;
}

/**
 * A finished execution's whole log, as `/stream` replays it: each replay ends at a `complete` (the interrupted one at its
 * approval first), and goes on after the last event it gave (Last-Event-ID) until the final one.
 */
async function logOf(executionId: string): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const final = (event: SseEvent | undefined) => event?.event === 'complete' && event.data.status !== 'interrupted';
  while (!final(events.at(-1))) {
    const after = events.at(-1)?.id;
    const stream = await openSse(`${twin.url}/api/v1/published/executions/${executionId}/stream`, {
      headers: { authorization: `Bearer ${key}`, ...(after === undefined ? {} : { 'last-event-id': String(after) }) },
    });
    await stream.ended;
    expect(stream.events.length, `the log of ${executionId} goes on after event ${after}`).toBeGreaterThan(0);
    events.push(...stream.events);
  }
  return events;
}

const storedRecord = async (executionId: string) =>
  (
    await twin.dynamo.send(
      new GetCommand({ TableName: twin.twin.tables.executions, Key: { pk: `execution#${executionId}` }, ConsistentRead: true }),
    )
  ).Item;

/** Resolves once the decision `deciding` has claimed the execution's approval (its lease is on the record), or has answered. */
async function claimed(executionId: string, deciding: Promise<unknown>): Promise<void> {
  let answered = false;
  const answer = () => void (answered = true);
  void deciding.then(answer, answer);
  while (!answered) {
    const record = await storedRecord(executionId);
    if (typeof record?.approval_lease_until === 'number' || record?.status !== 'interrupted') return;
  }
}

/** The state machine execution's status once it has ended (it ends right after the step that finished it). */
async function stateMachineEnding(executionId: string): Promise<string> {
  const arn = executionArnOf(twin.twin.state_machine_arn, executionId);
  return vi.waitFor(
    () => {
      const { status } = twin.stepFunctions.describeExecution(arn);
      if (status === 'RUNNING') throw new Error(`${executionId} is still running in Step Functions`);
      return status;
    },
    { timeout: 20_000, interval: 50 },
  );
}

describe('approve against stop', () => {
  it("never answers approve 200 for a decision that did not apply: 10 races, each approve's decision logged before any cancellation", async () => {
    // Both functions warm first, so neither request of a race waits for its function's first start.
    const warm = await waitingExecution('warm-up');
    expect((await client.stop(warm)).status).toBe(409);
    expect((await client.approve(warm, { feedback: 'go' })).status).toBe(200);

    for (let race = 0; race < 10; race++) {
      const executionId = await waitingExecution(`racer-${race}`);
      // Half the races send both at once; the other half send the stop once the approve's claim is on the record.
      const approving = client.approve(executionId, { feedback: 'go' });
      if (race % 2 === 1) await claimed(executionId, approving);
      const [approved, stopped] = await Promise.all([approving, client.stop(executionId)]);

      // Nothing else decides, and a stop can neither cancel a waiting execution nor one a decision is resuming.
      expect(approved.status).toBe(200);
      expect(approved.body).toMatchObject({ execution_id: executionId, decision: 'approved', status: 'running' });
      expect([200, 409]).toContain(stopped.status);
      // Before the claim (interrupted), during it, or after the execution went on to its end.
      if (stopped.status === 409) expect(stopped.body.detail).toMatch(/is interrupted;|is taking up a decision on approval|is completed;/);
      const final = await pollExecution(client, executionId, (body) => body.status === 'completed' || body.status === 'cancelled');

      const log = await logOf(executionId);
      const decision = log.findIndex((event) => event.event === 'node_update' && event.data.status === 'approved');
      expect(decision, `race ${race}: the approved decision is in the log`).toBeGreaterThan(0);
      expect(log[decision]!.data).toMatchObject({ approval_id: approved.body.approval_id, feedback: 'go' });
      const last = log.at(-1)!;
      if (stopped.status === 200) {
        // The stop came after the decision applied: its cancellation follows the decision, and Step Functions aborted.
        expect(final.status).toBe('cancelled');
        expect(last).toMatchObject({ event: 'complete', data: { status: 'cancelled' } });
        expect(await stateMachineEnding(executionId)).toBe('ABORTED');
      } else {
        expect(final).toMatchObject({ status: 'completed', output: 'approved: go' });
        expect(last).toMatchObject({ event: 'complete', data: { status: 'completed', output: 'approved: go' } });
        expect(await stateMachineEnding(executionId)).toBe('SUCCEEDED');
      }
    }
  }, 180_000);
});

describe('a stop after a decision applied', () => {
  it('cancels the execution after the decision in its log, and Step Functions ends it ABORTED', async () => {
    const executionId = await waitingExecution('decided-then-stopped', 'approve-then-wait');
    const approved = await client.approve(executionId, { feedback: 'go on' });
    expect(approved.status).toBe(200);
    // Until the step has taken the decision up, a stop answers 409; after it, the execution is running in its wait.
    await vi.waitFor(
      async () => {
        const record = await storedRecord(executionId);
        if (record?.approval_decision?.resumed !== true) throw new Error(`${executionId}: the decision is not taken up yet`);
      },
      { timeout: 20_000, interval: 20 },
    );
    const stopped = await client.stop(executionId);
    expect(stopped.status).toBe(200);

    const log = await logOf(executionId);
    const decision = log.findIndex((event) => event.event === 'node_update' && event.data.status === 'approved');
    expect(decision).toBeGreaterThan(0);
    // After it, the execution's wait began, and the stop's cancellation ends the log.
    expect(log.slice(decision + 1).map((event) => [event.event, event.data.node_id ?? event.data.status])).toEqual([
      ['node_update', 'hold'],
      ['node_update', 'hold'],
      ['complete', 'cancelled'],
    ]);
    expect(await stateMachineEnding(executionId)).toBe('ABORTED');
    // The decision applied before the stop: the approve sent again is answered as it was.
    expect((await client.approve(executionId, { feedback: 'go on' })).body).toEqual(approved.body);
  }, 60_000);
});

describe('a decision retried after its answer was lost', () => {
  it('answers the approve retried after a crash after its writes (502) with the same 200, and another decision 409', async () => {
    const executionId = await waitingExecution('crashed-approver');
    const url = `${twin.url}/api/v1/published/executions/${executionId}/approve`;
    const send = (feedback: string, options: { undocumented?: string } = {}) =>
      http(url, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ feedback }), ...options });
    const crashed: string[] = [];
    const stopListening = plan.onFault((fault) => crashed.push(fault.functionName));

    // The approve's invocation runs to its end, then its environment dies with the answer: API Gateway answers 502.
    plan.set('lambda:crash-after-write', 1);
    const lost = await send('ship it', { undocumented: 'the function crashed: API Gateway answers 502 by itself' });
    plan.set('lambda:crash-after-write', 0);
    expect(lost.status).toBe(502);
    expect(crashed).toContain('PublishedApprove');
    stopListening();

    const retried = await send('ship it');
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({ execution_id: executionId, approval_id: expect.any(String), decision: 'approved', status: 'running' });
    // The same answer once the execution has finished too; a different decision on the answered approval is refused.
    const done = await pollExecution(client, executionId, (body) => body.status === 'completed');
    expect(done).toMatchObject({ status: 'completed', output: 'approved: ship it' });
    const again = await send('ship it');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(retried.body);
    const other = await send('changed my mind');
    expect(other.status).toBe(409);
    expect(other.body.detail).toContain('not waiting for an approval');
    // Applied once: one decision in the log.
    const decisions = (await logOf(executionId)).filter(
      (event) => event.event === 'node_update' && (event.data.status === 'approved' || event.data.status === 'rejected'),
    );
    expect(decisions.map((event) => event.data)).toEqual([
      { node_id: 'ask', type: 'approval', status: 'approved', approval_id: retried.body.approval_id, feedback: 'ship it' },
    ]);
  }, 120_000);
});
