import { describe, expect, it } from 'vitest';
import type { Answer } from '../chaos/client.ts';
import { checkInvariants, type FinalStatuses } from '../chaos/invariants.ts';
import type { StoredState } from '../chaos/stored-state.ts';
import type { TrafficRecord } from '../chaos/traffic.ts';

/** Each invariant of the chaos suite fires on the history that breaks it, and stays quiet on one that does not. */
function history() {
  const record: TrafficRecord = {
    ledger: { answers: [], unanswered: [], retries: 0, dropped: 0 },
    events: new Map([['chat-1', { kind: 'dialogs', externalId: 'chat-1', eventId: '7' }]]),
    duplicates: [{ externalId: 'chat-1', answered: '7', first: '7' }],
    runs: new Map([
      ['run-1', { executionId: 'run-1', workflow: 'echo', idempotencyKey: 'k1', callbackTag: 'k1' }],
      ['run-2', { executionId: 'run-2', workflow: 'gate', idempotencyKey: 'k2', decision: 'reject' }],
    ]),
    keyAnswers: new Map([
      ['k1', new Set(['run-1'])],
      ['k2', new Set(['run-2'])],
    ]),
    streams: [{ executionId: 'run-1', ids: [1, 2, 3], completed: true, resumes: 1 }],
    doubleDecisions: [],
    collections: 1,
    requests: 0,
  };
  const deliveries = new Map<string, string[]>([['k1', ['msg_run-1', 'msg_run-1']]]);
  const handedOff = new Set(['src/7']);
  const stored: StoredState = {
    events: new Map([['chat-1', [{ source_id: 'src', event_id: 7, state: 'handed_off' }]]]),
    executions: new Map([
      ['chaos-k1', [{ execution_id: 'run-1', status: 'completed' }]],
      ['chaos-k2', [{ execution_id: 'run-2', status: 'completed' }]],
    ]),
    stateMachineExecutions: new Set(['run-1', 'run-2']),
    handedOff: (sourceId, eventId) => Promise.resolve(handedOff.has(`${sourceId}/${eventId}`)),
    close: () => undefined,
  };
  const finals: FinalStatuses = new Map([
    ['run-1', { status: 'completed' }],
    ['run-2', { status: 'completed', output: 'rejected: reject' } as { status: string }],
  ]);
  const setup = {
    calls: { linkId: 'l1', token: 't1', taskId: 'task1' },
    dialogs: { linkId: 'l2', token: 't2', taskId: 'task2' },
    callbacks: { url: (tag: string) => tag, deliveries: (tag: string) => deliveries.get(tag) ?? [], close: () => Promise.resolve() },
  };
  const check = async () => (await checkInvariants({ record, setup, stored, finals })).map((violation) => violation.invariant);
  return { record, stored, finals, deliveries, handedOff, check };
}

const answer = (status: number, body: string, retryAfter: string | null = '1'): Answer => ({
  label: 'x',
  status,
  retryAfter: retryAfter ?? undefined,
  contentType: 'application/json',
  refusalBody: body,
  ms: 1,
  path: '/x',
});

describe('chaos invariants', () => {
  it('hold on a history where everything went right', async () => {
    const { check, record } = history();
    record.ledger.answers.push(
      answer(503, '{"detail":"The service is busy; retry later"}'),
      answer(502, '{"error":"Internal server error","detail":"Internal server error"}'),
    );
    expect(await check()).toEqual([]);
  });

  it('catch an acknowledged event stored twice, under another id, or not handed off', async () => {
    const twice = history();
    twice.stored.events.get('chat-1')!.push({ source_id: 'other', event_id: 8, state: 'queued' });
    expect(await twice.check()).toContain('acknowledged-stored-once');
    const renumbered = history();
    renumbered.stored.events.get('chat-1')![0]!.event_id = 9;
    expect(await renumbered.check()).toContain('acknowledged-stored-once');
    const duplicate = history();
    duplicate.record.duplicates.push({ externalId: 'chat-1', answered: '8', first: '7' });
    expect(await duplicate.check()).toContain('acknowledged-stored-once');
    const queued = history();
    queued.stored.events.get('chat-1')![0]!.state = 'queued';
    expect(await queued.check()).toEqual(['handed-off-once']);
    const noObject = history();
    noObject.handedOff.clear();
    expect(await noObject.check()).toEqual(['handed-off-once']);
  });

  it('catch an execution still running, and a decision applied twice or the wrong way', async () => {
    const running = history();
    running.finals.set('run-1', { status: 'running' });
    expect(await running.check()).toContain('run-ends');
    const wrong = history();
    wrong.finals.set('run-2', { status: 'completed', output: 'approved: ' } as { status: string });
    expect(await wrong.check()).toEqual(['decision-once']);
    const double = history();
    double.record.doubleDecisions.push('run-2');
    expect(await double.check()).toEqual(['decision-once']);
  });

  it('catch one Idempotency-Key answered with two runs, or two executions stored for it', async () => {
    const answered = history();
    answered.record.keyAnswers.get('k1')!.add('run-3');
    expect(await answered.check()).toEqual(['one-run-per-key']);
    const stored = history();
    stored.stored.executions.get('chaos-k1')!.push({ execution_id: 'run-3', status: 'completed' });
    stored.stored.stateMachineExecutions.add('run-3');
    expect(await stored.check()).toEqual(['one-run-per-key']);
    // A record no state machine ran (its start refused, the record marked failed) is no second run.
    const refused = history();
    refused.stored.executions.get('chaos-k1')!.push({ execution_id: 'run-3', status: 'failed' });
    expect(await refused.check()).toEqual([]);
  });

  it('catch a finished run never called back, or called back under two webhook ids', async () => {
    const never = history();
    never.deliveries.delete('k1');
    expect(await never.check()).toEqual(['callback-delivered']);
    const two = history();
    two.deliveries.set('k1', ['msg_run-1', 'msg_other']);
    expect(await two.check()).toEqual(['callback-delivered']);
  });

  it('catch a resumed stream that repeats or skips an event, or never completes', async () => {
    for (const stream of [
      { ids: [1, 2, 2, 3], completed: true },
      { ids: [1, 3], completed: true },
      { ids: [1, 2], completed: false },
    ]) {
      const broken = history();
      broken.record.streams[0] = { executionId: 'run-1', resumes: 1, ...stream };
      expect(await broken.check()).toEqual(['stream-exactly-once']);
    }
  });

  it('catch a request the API never answered', async () => {
    const hung = history();
    hung.record.ledger.unanswered.push({ label: 'execute echo', url: 'http://127.0.0.1:1/api/v1/published/workflows/echo/execute' });
    expect(await hung.check()).toEqual(['answered']);
  });

  it("catch a refusal that is a 500, lacks Retry-After, leaves its API's error shape, or names an AWS error", async () => {
    for (const refusal of [
      answer(500, '{"detail":"Internal server error"}'),
      answer(503, '{"detail":"busy"}', null),
      answer(429, 'Too Many Requests'),
      answer(503, '{"message":"busy"}'),
      answer(503, '{"detail":"ProvisionedThroughputExceededException: slow down"}'),
      answer(502, '{"error":"Runtime.ExitError"}'),
      answer(503, '{"detail":"SlowDown"}'),
    ]) {
      const broken = history();
      broken.record.ledger.answers.push(refusal);
      expect(await broken.check(), refusal.refusalBody).toEqual(['refusal-shape']);
    }
  });
});
