import { ConflictError, ServiceUnavailableError } from '#shared/errors.ts';
import { APPROVAL_CLAIM_WAIT_MS, APPROVAL_DECISION_LEASE_MS, APPROVAL_REISSUE_WAIT_MS, APPROVAL_TAKE_UP_MS } from '#shared/limits.ts';
import type { Caller } from '#shared/access.ts';
import { executionArnOf } from '#shared/execution-arn.ts';
import { logger } from '#shared/lambda/powertools.ts';
import { decisionFingerprint, repeatedDecision } from './approval-decision.ts';
import { startCallbackExecution } from './callback-delivery.ts';
import { STOPPABLE_STATUSES, type ExecutionRecord, type RecordedDecision } from './execution-model.ts';
import { ownedExecution, unavailable, type ExecutionDeps } from './execution-service.ts';
import type { ApprovalDecision } from './step-state.ts';
import { endLogAsRecorded, streamEventAppender } from './stream-event-log.ts';
import { settledEvents } from './stream-events.ts';

/**
 * The API's two writers on an execution that is under way, which race on a waiting one: a stop and a decision on its
 * approval. A decision's claim holds the execution (status `running`, `approval_lease_until`) from before it is sent
 * until the execution's step has taken it up, its event in the log; a stop meanwhile answers 409, as it does for the
 * `interrupted` execution the claim came from. So a stop either comes first (the decision then answers 409) or after the
 * decision applied (its `decision` event precedes the cancellation in the log), and a decision's 200 always means applied.
 */

/** The claim's condition a stop writes under: none holds the execution, or its lease has passed. */
const NO_LIVE_CLAIM =
  'attribute_not_exists(approval_lease_until) OR attribute_type(approval_lease_until, :null) OR approval_lease_until <= :now';

/** How often a stop tries its write when a claim appears or ends between its read and its write. */
const STOP_ATTEMPTS = 3;

export async function stopExecution(deps: ExecutionDeps, caller: Caller, executionId: string) {
  const log = streamEventAppender(deps.events, executionId, { now: deps.now });
  const refuse = async (record: ExecutionRecord) => {
    if (claimHeldUntil(record, deps.now()) !== null)
      return new ConflictError(
        `Execution ${executionId} is taking up a decision on approval ${claimedApproval(record)}; stop it once it has resumed`,
      );
    // A stop that wrote the record but not the log (it failed half-way) is retried as a 409: the log still ends.
    await endLogAsRecorded(log, record);
    return new ConflictError(`Execution ${executionId} is ${record.status}; only queued or running executions can be stopped`);
  };
  let previous: ExecutionRecord | undefined;
  let cancelled: Pick<ExecutionRecord, 'status' | 'finished_at' | 'pending_approval' | 'task_token'> | undefined;
  for (let attempt = 0; !previous && attempt < STOP_ATTEMPTS; attempt++) {
    const record = await ownedExecution(deps, caller, executionId, true);
    if (!STOPPABLE_STATUSES.includes(record.status) || claimHeldUntil(record, deps.now()) !== null) throw await refuse(record);
    const now = deps.now();
    cancelled = { status: 'cancelled', finished_at: new Date(now).toISOString(), pending_approval: null, task_token: null };
    previous = await deps.executions.transition(executionId, STOPPABLE_STATUSES, cancelled, {
      expression: NO_LIVE_CLAIM,
      values: { ':null': 'NULL', ':now': now },
    });
  }
  if (!previous || !cancelled) throw await refuse(await ownedExecution(deps, caller, executionId, true));
  await log.append(settledEvents({ ...previous, ...cancelled, output: null, error: null }));
  try {
    await deps.stateMachine.stop(executionArnOf(deps.stateMachineArn, executionId), 'Stopped through the API');
  } catch (error) {
    // The record already says cancelled, and an execution that is not running ends at its next step (a waiting approval
    // at its timeout), so a stop that did not reach Step Functions (not started yet, throttled) changes nothing the
    // caller sees; failing here would lose the callback, as a retried stop answers 409.
    if ((error as Error).name !== 'ExecutionDoesNotExist')
      logger.warn('stop not sent to Step Functions', { executionId, error: error as Error });
  }
  if (previous.callback_url) await startCallbackExecution(deps.stateMachine, executionId);
  return { execution_id: executionId, status: 'cancelled' as const };
}

/** Step Functions' answers for a task token that can never be answered again, and the execution's error for each. */
const TOKEN_GONE = new Map([
  ['TaskTimedOut', 'The approval was not answered in time'],
  ['TaskDoesNotExist', 'The approval could not be delivered: the execution was no longer waiting for it'],
  ['InvalidToken', 'The approval could not be delivered: its task token is invalid'],
]);

const decided = (executionId: string, approvalId: string, decision: ApprovalDecision['decision']) => ({
  execution_id: executionId,
  approval_id: approvalId,
  decision,
  status: 'running' as const,
});

/**
 * Approve or reject the pending step. The approval is claimed in the table first, under a lease
 * (`approval_lease_until`), so two decisions cannot both be sent; the claim keeps the approval and its task token,
 * and records the decision (`approval_decision`), so whatever happens after it there is a way back:
 * - sent: the claim is marked delivered and its lease lengthened until the execution's step takes the decision up
 *   (approval-decision.ts); a stop waits for that, so the 200 means the decision applies;
 * - not sent, the token may still be good (throttled, unavailable): the approval is given back (503, retry);
 * - not sent, the token is gone (timed out, task no longer exists, invalid): the execution fails with its callback (409);
 * - the invocation died, or the give-back failed: once the lease has passed, the next decision takes the claim over
 *   and sends again. Step Functions accepts one answer per token, so exactly one decision applies; a taken-over
 *   claim that finds the token gone cannot tell whether the first send landed, so it leaves the execution to its own path.
 * The same request again (same decision and feedback) once its decision was delivered answers the same 200: a caller whose
 * answer was lost retries and learns that its decision applied. Any other decision on an answered approval is 409.
 */
export async function decideApproval(
  deps: ExecutionDeps,
  caller: Caller,
  executionId: string,
  decision: ApprovalDecision['decision'],
  feedback: string,
) {
  const fingerprint = decisionFingerprint(decision, feedback);
  const record = await afterLiveClaim(deps, caller, await ownedExecution(deps, caller, executionId, true));
  const repeated = repeatOf(record, decision, fingerprint);
  if (repeated) return decided(executionId, repeated.approval_id, decision);
  const { pending_approval: pending, task_token: token } = record;
  const now = deps.now();
  const heldUntil = claimHeldUntil(record, Number.NEGATIVE_INFINITY);
  if (!pending || !token || (record.status !== 'interrupted' && heldUntil === null)) {
    throw new ConflictError(`Execution ${executionId} is not waiting for an approval (status ${record.status})`);
  }
  if (deliveredClaim(record)) throw new ConflictError(`Approval ${pending.approval_id} is no longer pending`);
  if (heldUntil !== null && heldUntil > now) {
    // Another decision is being sent: it lands (this one then answers 409) or gives the approval back, or it died and
    // its claim must pass before anyone can send. Only a retry after the lease is sure to find one of those.
    throw new ServiceUnavailableError(`Approval ${pending.approval_id} is being decided; retry later`, heldUntil - now);
  }
  const lease = now + APPROVAL_DECISION_LEASE_MS;
  const ours = { ':approval': pending.approval_id, ':token': token };
  const claim: RecordedDecision = { approval_id: pending.approval_id, decision, fingerprint };
  const claimed =
    heldUntil === null
      ? await deps.executions.transition(
          executionId,
          ['interrupted'],
          { status: 'running', approval_lease_until: lease, approval_decision: claim },
          {
            expression: 'pending_approval.approval_id = :approval AND task_token = :token',
            values: ours,
          },
        )
      : await deps.executions.transition(
          executionId,
          ['running'],
          { approval_lease_until: lease, approval_decision: claim },
          {
            expression: 'pending_approval.approval_id = :approval AND task_token = :token AND approval_lease_until = :held',
            values: { ...ours, ':held': heldUntil },
          },
        );
  if (!claimed) {
    // The same request may have claimed it first (a retry sent while the first was still on its way): it is answered as that one.
    const current = await afterLiveClaim(deps, caller, await ownedExecution(deps, caller, executionId, true));
    const first = repeatOf(current, decision, fingerprint);
    if (first) return decided(executionId, first.approval_id, decision);
    throw new ConflictError(`Approval ${pending.approval_id} is no longer pending`);
  }
  // Every later write names this claim, so none of them touches an execution a stop, a take-over, the step's take-up
  // or the next approval changed.
  const whileClaimed = {
    expression: 'pending_approval.approval_id = :approval AND task_token = :token AND approval_lease_until = :lease',
    values: { ...ours, ':lease': lease },
  };
  const release = (changes: Partial<ExecutionRecord>, what: string) =>
    deps.executions
      .transition(executionId, ['running'], { approval_lease_until: null, ...changes }, whileClaimed)
      .catch((error: unknown) => {
        logger.warn(`approval claim not ${what}; it passes with its lease`, { executionId, error: error as Error });
        return undefined;
      });
  try {
    await deps.stateMachine.resume(token, { decision, feedback, approval_id: pending.approval_id } satisfies ApprovalDecision);
  } catch (error) {
    const name = (error as Error).name;
    const gone = TOKEN_GONE.get(name);
    if (gone && heldUntil !== null) {
      // The claim taken over was sent after all, most likely, and its step has not taken it up yet. When it was this same
      // request, it applied: delivered, as if this one had sent it. Otherwise the record gets that claim's decision back
      // (a repeat of it is then answered 200) and this one is refused; this lease holds a stop off a while longer.
      const first = record.approval_decision;
      if (first?.approval_id !== pending.approval_id) throw new ConflictError(`Approval ${pending.approval_id} is no longer pending`);
      if (first.decision === decision && first.fingerprint === fingerprint) {
        await delivered(deps, caller, { executionId, claim, decision, whileClaimed });
        return decided(executionId, pending.approval_id, decision);
      }
      await deps.executions
        .transition(executionId, ['running'], { approval_decision: first }, whileClaimed)
        .catch((restoreError: unknown) => logger.warn('taken-over claim not restored', { executionId, error: restoreError as Error }));
      throw new ConflictError(`Approval ${pending.approval_id} is no longer pending`);
    }
    if (name === 'TaskDoesNotExist' && record.dead_task_token !== token) {
      // A task whose attempt failed (its function crashed after recording the wait) is retried with a new token, which
      // its next attempt records within seconds: the approval goes back, marked, and the retry sends with the new
      // token. Found dead a second time, the token was not replaced: the execution ends below.
      await release({ status: 'interrupted', dead_task_token: token }, 'given back');
      throw unavailable(error, APPROVAL_REISSUE_WAIT_MS);
    }
    if (gone) {
      // Nobody can ever answer this approval: the execution ends failed now, with its callback, instead of staying running.
      const finishedAt = new Date(deps.now()).toISOString();
      const failed = await deps.executions.transition(
        executionId,
        ['running'],
        { status: 'failed', error: gone, finished_at: finishedAt, pending_approval: null, task_token: null, approval_lease_until: null },
        whileClaimed,
      );
      if (failed)
        await streamEventAppender(deps.events, executionId, { now: deps.now }).append(
          settledEvents({ ...failed, status: 'failed', error: gone, output: null, pending_approval: null }),
        );
      if (failed?.callback_url) await startCallbackExecution(deps.stateMachine, executionId);
      throw new ConflictError(`Approval ${pending.approval_id} can no longer be answered (${name}); the execution has failed`);
    }
    // The token may still be good (throttled, service unavailable): give the approval back so the caller can retry.
    const givenBack = await release({ status: 'interrupted' }, 'given back');
    throw unavailable(error, givenBack ? undefined : lease - deps.now());
  }
  await delivered(deps, caller, { executionId, claim, decision, whileClaimed });
  return decided(executionId, pending.approval_id, decision);
}

/**
 * After the send: the claim is marked delivered and held until the step takes the decision up. When that write finds the
 * claim changed, the step has taken it up already (the usual case), or the lease had passed before the send landed and a
 * stop ended the execution first: then the decision did not apply, and the caller is told so (409), never 200.
 */
async function delivered(
  deps: ExecutionDeps,
  caller: Caller,
  sent: {
    executionId: string;
    claim: RecordedDecision;
    decision: ApprovalDecision['decision'];
    whileClaimed: { expression: string; values: Record<string, unknown> };
  },
): Promise<void> {
  const { executionId, claim } = sent;
  const held = await deps.executions
    .transition(
      executionId,
      ['running'],
      { approval_lease_until: deps.now() + APPROVAL_TAKE_UP_MS, approval_decision: { ...claim, delivered: true } },
      sent.whileClaimed,
    )
    .catch((error: unknown) => {
      // The claim's own lease still holds the execution for a while; the step normally takes the decision up within it.
      logger.warn('delivered decision not marked; its claim passes with its lease', { executionId, error: error as Error });
      return true;
    });
  if (held) return;
  const record = await ownedExecution(deps, caller, executionId, true);
  if (repeatOf(record, sent.decision, claim.fingerprint) || record.status !== 'cancelled') return;
  throw new ConflictError(`Execution ${executionId} was stopped before approval ${claim.approval_id} could be taken up`);
}

/** The decision this request repeats, once delivered: never while the execution awaits another approval it would answer. */
function repeatOf(record: ExecutionRecord, decision: ApprovalDecision['decision'], fingerprint: string): RecordedDecision | undefined {
  const repeated = repeatedDecision(record, decision, fingerprint);
  if (!repeated) return undefined;
  const awaitsAnother = record.status === 'interrupted' && record.pending_approval?.approval_id !== repeated.approval_id;
  return awaitsAnother ? undefined : repeated;
}

/** The pending approval's claim was sent: the approval is answered, though the step has not taken the decision up yet. */
function deliveredClaim(record: ExecutionRecord): boolean {
  const recorded = record.approval_decision;
  return recorded?.delivered === true && recorded.approval_id === record.pending_approval?.approval_id;
}

/**
 * When the claim on the execution's approval passes, if it is still live at `now` (a claim only ever leaves an
 * execution `running`); null while none holds it. `Number.NEGATIVE_INFINITY` answers a lapsed claim's lease too.
 */
function claimHeldUntil(record: ExecutionRecord, now: number): number | null {
  const heldUntil = record.status === 'running' ? (record.approval_lease_until ?? null) : null;
  return heldUntil !== null && heldUntil > now ? heldUntil : null;
}

const claimedApproval = (record: ExecutionRecord) => record.approval_decision?.approval_id ?? record.pending_approval?.approval_id;

/**
 * A decision that finds another one's claim live waits a moment for it (its send takes a round trip), so that the
 * usual race of two decisions answers the loser 409 as the API promises, not 503; a claim still held after
 * APPROVAL_CLAIM_WAIT_MS (a throttled send, a holder that died) is left to the 503 and its Retry-After. A delivered claim
 * needs no wait: its approval is answered.
 */
async function afterLiveClaim(deps: ExecutionDeps, caller: Caller, record: ExecutionRecord): Promise<ExecutionRecord> {
  let current = record;
  for (let waited = 0, pause = 25; waited < APPROVAL_CLAIM_WAIT_MS; waited += pause, pause = Math.min(pause * 2, 400)) {
    if (claimHeldUntil(current, deps.now()) === null || !current.task_token || deliveredClaim(current)) return current;
    await deps.sleep(pause);
    current = await ownedExecution(deps, caller, current.execution_id, true);
  }
  return current;
}
