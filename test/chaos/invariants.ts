import type { Answer } from './client.ts';
import type { StoredState } from './stored-state.ts';
import type { TrafficRecord, TrafficSetup } from './traffic.ts';

/**
 * What must never happen, whatever failed underneath (Jepsen's way: break things, then check the history against
 * the rules). Each violation names its invariant and what broke it.
 */
export interface Violation {
  invariant:
    | 'answered'
    | 'acknowledged-stored-once'
    | 'handed-off-once'
    | 'run-ends'
    | 'decision-once'
    | 'one-run-per-key'
    | 'callback-delivered'
    | 'stream-exactly-once'
    | 'refusal-shape';
  detail: string;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** An AWS error's name in a body meant for callers (ThrottlingException, SlowDown, Runtime.ExitError, States.Timeout...). */
const AWS_ERROR_NAME =
  /\b[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:Exception|Error|Fault)\b|\bSlowDown\b|\b(?:Runtime|Sandbox|Lambda|States|Function)\.[A-Z]\w+/;

/** An execution's status as GET /executions answered it after the traffic settled (`undefined`: never read). */
export type FinalStatuses = Map<string, { status: string; pending_approval?: unknown } | undefined>;

export interface InvariantInput {
  record: TrafficRecord;
  setup: Pick<TrafficSetup, 'calls' | 'dialogs' | 'callbacks'>;
  stored: StoredState;
  finals: FinalStatuses;
}

export async function checkInvariants({ record, setup, stored, finals }: InvariantInput): Promise<Violation[]> {
  const violations: Violation[] = [];
  const violate = (invariant: Violation['invariant'], detail: string) => violations.push({ invariant, detail });

  // 1. Every acknowledged event is stored exactly once, with the event id it was answered with; a duplicate is
  // answered with the first send's id; the collection handed each off (the hand-off object is keyed by event id, so
  // it exists at most once; its event says handed_off).
  for (const event of record.events.values()) {
    const items = stored.events.get(event.externalId) ?? [];
    if (items.length !== 1)
      violate('acknowledged-stored-once', `${event.externalId}: acknowledged as ${event.eventId}, stored ${items.length} times`);
    else if (String(items[0]!.event_id) !== event.eventId)
      violate('acknowledged-stored-once', `${event.externalId}: acknowledged as ${event.eventId}, stored as ${items[0]!.event_id}`);
    else if (items[0]!.state !== 'handed_off')
      violate('handed-off-once', `${event.externalId} (${event.kind}): ${items[0]!.state} after the last collection`);
    else if (!(await stored.handedOff(items[0]!.source_id, items[0]!.event_id)))
      violate('handed-off-once', `${event.externalId}: handed_off without its hand-off object`);
  }
  for (const duplicate of record.duplicates) {
    if (duplicate.answered !== duplicate.first)
      violate(
        'acknowledged-stored-once',
        `${duplicate.externalId}: a duplicate answered ${duplicate.answered}, the first send ${duplicate.first}`,
      );
  }

  // 2. Every answered run ended or waits at its approval; each approval decision applied once.
  for (const run of record.runs.values()) {
    const final = finals.get(run.executionId);
    const status = final?.status ?? 'unknown';
    const waiting = status === 'interrupted' && run.workflow === 'gate' && run.decision === undefined;
    if (!TERMINAL.has(status) && !waiting) violate('run-ends', `${run.executionId} (${run.workflow}) still ${status}`);
    if (run.workflow === 'gate' && run.decision && status === 'completed') {
      // Both of the gate's edges end the execution completed: its output says which decision applied.
      const output = (final as { output?: unknown }).output;
      const applied =
        typeof output !== 'string'
          ? undefined
          : output.startsWith('approved')
            ? 'approve'
            : output.startsWith('rejected')
              ? 'reject'
              : undefined;
      if (applied !== run.decision)
        violate('decision-once', `${run.executionId}: asked to ${run.decision}, ended with output ${JSON.stringify(output)}`);
    }
  }
  for (const executionId of record.doubleDecisions) violate('decision-once', `${executionId}: a second decision was accepted`);

  // 3. One Idempotency-Key never starts two runs: every answer for a key named one execution, and Step Functions started one
  // execution for its user. A first attempt whose start was refused leaves a record (marked failed, or still queued
  // when a fault stopped that too) that no state machine ever ran and no answer named; it is no second run.
  for (const [key, executionIds] of record.keyAnswers) {
    if (executionIds.size !== 1) violate('one-run-per-key', `${key}: answered with ${[...executionIds].join(', ')}`);
    const started = (stored.executions.get(`chaos-${key}`) ?? []).filter((run) => stored.stateMachineExecutions.has(run.execution_id));
    if (started.length !== 1)
      violate(
        'one-run-per-key',
        `${key}: ${started.length} started executions stored (${started.map((run) => `${run.execution_id} ${run.status}`).join(', ')})`,
      );
  }

  // 4. Each finished run with a callback was delivered at least once, always with the same webhook-id.
  for (const run of record.runs.values()) {
    if (!run.callbackTag || !TERMINAL.has(finals.get(run.executionId)?.status ?? '')) continue;
    const ids = new Set(setup.callbacks.deliveries(run.callbackTag));
    if (ids.size === 0) violate('callback-delivered', `${run.executionId}: finished, never called back`);
    else if (ids.size > 1 || !ids.has(`msg_${run.executionId}`))
      violate('callback-delivered', `${run.executionId}: webhook ids ${[...ids].join(', ')}`);
  }

  // 5. A stream, resumed as often as it was cut, yields every event id exactly once, in order, up to its complete.
  for (const stream of record.streams) {
    const expected = Array.from({ length: stream.ids.length }, (_, index) => index + 1);
    if (!stream.completed) violate('stream-exactly-once', `${stream.executionId}: no complete after ${stream.resumes} resumes`);
    else if (stream.ids.join(',') !== expected.join(','))
      violate('stream-exactly-once', `${stream.executionId}: ids ${stream.ids.join(',')}`);
  }

  // Every request gets an answer (a refusal is an answer); one the API never answered is a finding of its own.
  for (const request of record.ledger.unanswered) violate('answered', `${request.label} ${new URL(request.url).pathname}: no answer`);

  // 6. A refusal a fault can cause (5xx, 429) is never a 500, says when to retry, has its API's error shape, names no AWS error.
  for (const answer of record.ledger.answers) {
    const problem = refusalProblem(answer);
    if (problem) violate('refusal-shape', `${answer.label} ${answer.status}: ${problem}`);
  }
  return violations;
}

function refusalProblem(answer: Answer): string | undefined {
  if (answer.status < 500 && answer.status !== 429) return undefined;
  if (answer.status === 500) return `500 ${answer.refusalBody}`;
  if (!answer.retryAfter) return `no Retry-After (${answer.refusalBody})`;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.refusalBody) as Record<string, unknown>;
  } catch {
    return `not JSON: ${answer.refusalBody.slice(0, 200)}`;
  }
  const message = body.detail ?? body.error;
  if (typeof message !== 'string') return `neither detail nor error: ${answer.refusalBody}`;
  if (AWS_ERROR_NAME.test(answer.refusalBody)) return `names an AWS error: ${answer.refusalBody}`;
  return undefined;
}
