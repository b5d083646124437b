import { describe, expect, it } from 'vitest';
import type { Delivery } from '../chaos/callback-receiver.ts';
import type { Answer } from '../chaos/client.ts';
import { messagesDigest } from '../chaos/expected-conversation.ts';
import type { FaultRecord } from '../chaos/fault-tally.ts';
import { checkInvariants, type FinalStatuses, type InvariantName } from '../chaos/invariants.ts';
import type { StoredState } from '../chaos/stored-state.ts';
import type { TrafficRecord } from '../chaos/traffic-record.ts';

/**
 * The logic of each invariant of the chaos suite on a small history: quiet on one where everything went right, firing on
 * each way the history can go wrong. (test/e2e/chaos.test.ts breaks the product itself and sees each one fire.)
 */
const MESSAGES = [{ text: 'hi', timestamp: '2026-01-01T00:00:00.000Z', author_name: 'Bob', author_role: 'client' }];
const HANDOFF = {
  event_id: 7,
  external_id: 'chat-1',
  source_id: 'src',
  link_id: 'l2',
  type: 'text',
  source_channel: 'telegram',
  status: null,
  metadata: null,
  occurred_at: '2026-01-01T00:00:00.000Z',
  messages: MESSAGES,
};

function history() {
  const record: TrafficRecord = {
    ledger: { answers: [], unanswered: [], retries: 0, dropped: 0 },
    events: new Map([
      [
        'src/chat-1',
        {
          kind: 'dialogs',
          linkId: 'l2',
          sourceId: 'src',
          externalId: 'chat-1',
          eventId: '7',
          expected: { ...HANDOFF, type: 'text', messages: messagesDigest(MESSAGES) } as never,
        },
      ],
    ]),
    sent: new Map([['chat-1', new Set(['src'])]]),
    duplicates: [{ key: 'src/chat-1', answered: '7', first: '7' }],
    runs: new Map([
      [
        'run-1',
        {
          executionId: 'run-1',
          workflow: 'echo',
          idempotencyKey: 'k1',
          callback: { tag: 'k1', behaviour: 'accept', secret: 's' },
          decisions: [],
          stops: [],
        },
      ],
      [
        'run-2',
        {
          executionId: 'run-2',
          workflow: 'gate',
          idempotencyKey: 'k2',
          decisions: [{ decision: 'reject', status: 200, racingStop: false }],
          stops: [],
        },
      ],
    ]),
    keyAnswers: new Map([
      ['k1', new Set(['run-1'])],
      ['k2', new Set(['run-2'])],
    ]),
    streams: [{ workflow: 'echo', executionId: 'run-1', ids: [1, 2, 3], completeStatus: 'completed', resumes: 1, statuses: [200, 200] }],
    subscriptions: [],
    sweeps: [{ how: 'manual', sourceIds: ['src'], fromByte: 0, toByte: 1_000, startedAt: 0, endedAt: 10 }],
    kinds: {},
    collections: 1,
    requests: 0,
  };
  const body = JSON.stringify({ execution_id: 'run-1', status: 'completed', output: 'Echo: hello' });
  const deliveries = new Map<string, Delivery[]>([['k1', [{ webhookId: 'msg_run-1', outcome: 'accepted', signature: 'ok', body }]]]);
  const handoffs = new Map([['src/7', JSON.stringify(HANDOFF)]]);
  const stored: StoredState = {
    events: new Map([['chat-1', [{ source_id: 'src', event_id: 7, state: 'handed_off' }]]]),
    executions: new Map([
      ['chaos-k1', [{ execution_id: 'run-1', status: 'completed', callback_state: 'delivered' }]],
      ['chaos-k2', [{ execution_id: 'run-2', status: 'completed' }]],
    ]),
    stateMachineExecutions: new Set(['run-1', 'run-2']),
    announcements: [
      {
        byte: 0,
        detail: {
          bucket: 'b',
          key: 'handoff/src/7.json',
          event_id: 7,
          external_id: 'chat-1',
          source_id: 'src',
          link_id: 'l2',
          type: 'text',
        },
      },
    ],
    handoff: (sourceId, eventId) => Promise.resolve(handoffs.get(`${sourceId}/${eventId}`)),
    close: () => undefined,
  };
  const finals: FinalStatuses = new Map([
    ['run-1', { execution_id: 'run-1', status: 'completed', output: 'Echo: hello' }],
    ['run-2', { status: 'completed', output: 'rejected: reject' }],
  ]);
  const strays: string[] = [];
  const faults: FaultRecord[] = [];
  const setup = {
    links: [],
    callbacks: {
      url: (tag: string) => tag,
      plan: () => undefined,
      watch: () => undefined,
      deliveries: (tag: string) => deliveries.get(tag) ?? [],
      strays: () => strays,
      toolCalls: () => 0,
      close: () => Promise.resolve(),
    },
  };
  const check = async (): Promise<InvariantName[]> => [
    ...new Set((await checkInvariants({ record, setup, stored, finals, faults })).map((violation) => violation.invariant)),
  ];
  return { record, stored, finals, deliveries, handoffs, strays, faults, check };
}

const answer = (status: number, body: string, path = '/api/v1/published/x', retryAfter: string | null = '1'): Answer => ({
  label: 'x',
  status,
  retryAfter: retryAfter ?? undefined,
  contentType: 'application/json',
  refusalBody: body,
  ms: 1,
  path,
});

describe('chaos invariants', () => {
  it('hold on a history where everything went right', async () => {
    const { check, record } = history();
    record.ledger.answers.push(
      answer(503, '{"detail":"The service is busy; retry later"}'),
      answer(409, '{"detail":"Execution run-1 is completed; only queued or running executions can be stopped"}'),
      answer(400, '{"error":"Validation error","details":[{"field":"messages.0.text","message":"Required"}]}', '/api/v1/webhooks/t/events'),
    );
    expect(await check()).toEqual([]);
  });

  it('catch an event stored under a source it was never sent to, twice, or under another id', async () => {
    const second = history();
    second.stored.events.get('chat-1')!.push({ source_id: 'other', event_id: 8, state: 'handed_off' });
    expect(await second.check()).toEqual(['acknowledged-stored-once']);
    const renumbered = history();
    renumbered.stored.events.get('chat-1')![0]!.event_id = 9;
    expect(await renumbered.check()).toContain('acknowledged-stored-once');
    const duplicate = history();
    duplicate.record.duplicates.push({ key: 'src/chat-1', answered: '8', first: '7' });
    expect(await duplicate.check()).toEqual(['acknowledged-stored-once']);
  });

  it('catch a conversation not handed off, handed off with other content, announced twice or outside a sweep', async () => {
    const queued = history();
    queued.stored.events.get('chat-1')![0]!.state = 'queued';
    expect(await queued.check()).toEqual(['handed-off-once']);
    const altered = history();
    altered.handoffs.set('src/7', JSON.stringify({ ...HANDOFF, messages: [{ ...MESSAGES[0], text: 'changed' }] }));
    expect(await altered.check()).toEqual(['handed-off-once']);
    const repeated = history();
    repeated.stored.announcements.push({ ...repeated.stored.announcements[0]!, byte: 500 });
    expect(await repeated.check()).toEqual(['handed-off-once']);
    // A repeat within the sweep after a fault of its batch is the one the product allows.
    repeated.faults.push({ kind: 'dynamodb:error', functionName: 'CollectBatch', at: 5 });
    expect(await repeated.check()).toEqual([]);
    const outside = history();
    outside.stored.announcements[0]!.byte = 2_000;
    expect(await outside.check()).toEqual(['handed-off-once']);
  });

  it('catch an execution still running, failing past what the faults explain, or cancelled by no stop', async () => {
    const running = history();
    running.finals.set('run-1', { status: 'running' });
    expect(await running.check()).toContain('run-ends');
    const failed = history();
    failed.finals.set('run-2', { status: 'failed', error: 'gave up' });
    expect(await failed.check()).toContain('run-ends');
    failed.faults.push(...Array.from({ length: 4 }, (_, at) => ({ kind: 'lambda:error' as const, functionName: 'WorkflowStep', at })));
    expect(await failed.check()).not.toContain('run-ends');
    const cancelled = history();
    cancelled.finals.set('run-2', { status: 'cancelled' });
    expect(await cancelled.check()).toContain('run-ends');
  });

  it('catch two decisions answered 200, the wrong one applied, or a 200 overtaken by a stop', async () => {
    const both = history();
    both.record.runs.get('run-2')!.decisions.push({ decision: 'approve', status: 200, racingStop: false });
    expect(await both.check()).toContain('decision-once');
    const wrong = history();
    wrong.finals.set('run-2', { status: 'completed', output: 'approved: ' });
    expect(await wrong.check()).toEqual(['decision-once']);
    const overtaken = history();
    overtaken.finals.set('run-2', { status: 'cancelled' });
    overtaken.record.runs.get('run-2')!.stops.push({ purpose: 'race', status: 200 });
    overtaken.record.runs.get('run-2')!.lifecycle = [{ id: 5, event: 'status', data: { status: 'cancelled' } }];
    expect(await overtaken.check()).toEqual(['decision-not-overtaken']);
    overtaken.record.runs.get('run-2')!.lifecycle!.unshift({ id: 4, event: 'decision', data: { decision: 'rejected' } });
    expect(await overtaken.check()).toEqual([]);
  });

  it('catch a stop answered 200 that stopped nothing, or one at an approval or after the end', async () => {
    for (const purpose of ['streaming', 'approval', 'ended'] as const) {
      const stopped = history();
      stopped.record.runs.get('run-1')!.stops.push({ purpose, status: 200 });
      expect(await stopped.check(), purpose).toEqual(['stop-honoured']);
    }
  });

  it('catch one Idempotency-Key answered with two executions, or two started for it', async () => {
    const answered = history();
    answered.record.keyAnswers.get('k1')!.add('run-3');
    expect(await answered.check()).toEqual(['one-run-per-key']);
    const started = history();
    started.stored.executions.get('chaos-k1')!.push({ execution_id: 'run-3', status: 'completed' });
    started.stored.stateMachineExecutions.add('run-3');
    expect(await started.check()).toEqual(['one-run-per-key']);
    // A record no state machine ran (its start refused, the record marked failed) is no second execution.
    const refused = history();
    refused.stored.executions.get('chaos-k1')!.push({ execution_id: 'run-3', status: 'failed' });
    expect(await refused.check()).toEqual([]);
  });

  it('catch a callback never taken, unsigned, with another body or id, repeated, left pending, or a redirect followed', async () => {
    const breaks: ((h: ReturnType<typeof history>) => void)[] = [
      (h) => h.deliveries.delete('k1'),
      (h) => (h.deliveries.get('k1')![0]!.signature = 'unsigned'),
      (h) => (h.deliveries.get('k1')![0]!.webhookId = 'msg_other'),
      (h) => (h.deliveries.get('k1')![0]!.body = JSON.stringify({ execution_id: 'run-1', status: 'failed' })),
      (h) => h.deliveries.get('k1')!.push({ ...h.deliveries.get('k1')![0]! }),
      (h) => (h.record.runs.get('run-1')!.callback!.behaviour = 'always-fail'),
      (h) => h.strays.push('POST /moved/k1'),
    ];
    for (const [index, broken] of breaks.entries()) {
      const callbacks = history();
      broken(callbacks);
      expect(await callbacks.check(), `break ${index}`).toEqual(['callback-delivered']);
    }
  });

  it('catch a stream that repeats, skips or never completes, ends in 204 unread, never opens, or says another end', async () => {
    for (const stream of [
      { ids: [1, 2, 2, 3] },
      { ids: [1, 3] },
      { completeStatus: undefined },
      { endedBefore204: true },
      { executionId: '' },
      { completeStatus: 'failed' },
    ]) {
      const broken = history();
      Object.assign(broken.record.streams[0]!, stream);
      expect(await broken.check(), JSON.stringify(stream)).toEqual(['stream-exactly-once']);
    }
  });

  it('catch a subscription out of order, cut short, ending on another status, or missing the decision it saw', async () => {
    const events = [
      { id: 4, event: 'status', data: { status: 'interrupted' } },
      { id: 5, event: 'decision', data: { decision: 'rejected' } },
      { id: 9, event: 'status', data: { status: 'completed', output: 'rejected: reject', error: null } },
    ];
    const subscription = { executionId: 'run-2', resumes: 0, beforeDecision: true, ended: 'final' as const };
    const fine = history();
    fine.record.subscriptions.push({ ...subscription, events });
    expect(await fine.check()).toEqual([]);
    for (const broken of [
      { events: [events[0]!, events[2]!, events[1]!] },
      { events: events.slice(0, 2), ended: 'cut' as const },
      { events: [events[0]!, events[1]!, { ...events[2]!, data: { status: 'failed', output: null, error: 'x' } }] },
      { events: [events[0]!, events[2]!] },
    ]) {
      const wrong = history();
      wrong.record.subscriptions.push({ ...subscription, ...broken });
      expect(await wrong.check(), JSON.stringify(broken)).toContain('lifecycle-events');
    }
  });

  it('catch a request the API never answered', async () => {
    const hung = history();
    hung.record.ledger.unanswered.push({ label: 'execute echo', url: 'http://127.0.0.1:1/api/v1/published/workflows/echo/execute' });
    expect(await hung.check()).toEqual(['answered']);
  });

  it("catch a refusal of any status that is a 500, lacks Retry-After, leaves its API's error shape, or names an AWS error", async () => {
    for (const refusal of [
      answer(500, '{"detail":"Internal server error"}'),
      answer(503, '{"detail":"busy"}', undefined, null),
      answer(429, 'Too Many Requests'),
      answer(503, '{"message":"busy"}'),
      answer(409, '{"detail":"ConditionalCheckFailedException: the conditional request failed"}'),
      answer(404, '{"detail":"Runtime.ExitError"}'),
      answer(503, '{"detail":"SlowDown"}'),
      answer(409, '{"detail":"taken"}', '/api/v1/webhooks/t/events'),
      answer(400, '{"error":"Validation error"}', '/api/v1/webhooks/t/events'),
      // The HTTP API's own answer is taken on a webhook path only, and only as the HTTP API words it.
      answer(500, '{"message":"Internal Server Error"}', '/api/v1/published/x', null),
      answer(500, '{"error":"Internal server error"}', '/api/v1/webhooks/t/events', null),
    ]) {
      const broken = history();
      broken.record.ledger.answers.push(refusal);
      expect(await broken.check(), `${refusal.status} ${refusal.refusalBody}`).toEqual(['refusal-shape']);
    }
  });

  it("take the webhook API's own 500 and 503 as the HTTP API sends them: {message}, no Retry-After", async () => {
    for (const own of [
      answer(500, '{"message":"Internal Server Error"}', '/api/v1/webhooks/t/events', null),
      answer(503, '{"message":"Service Unavailable"}', '/api/v1/webhooks/t/events', null),
    ]) {
      const served = history();
      served.record.ledger.answers.push(own);
      expect(await served.check(), `${own.status} ${own.refusalBody}`).toEqual([]);
    }
  });
});
