import { randomUUID } from 'node:crypto';
import type { Caller } from '#shared/access.ts';
import { ServiceUnavailableError, UnprocessableContentError } from '#shared/errors.ts';
import { logger } from '#shared/lambda/powertools.ts';
import {
  IDEMPOTENCY_KEY_RETENTION_MS,
  IDEMPOTENT_START_LEASE_MARGIN_MS,
  IDEMPOTENT_START_LEASE_MS,
  IDEMPOTENT_START_POLL_FIRST_MS,
  IDEMPOTENT_START_POLL_MAX_MS,
  IDEMPOTENT_START_WAIT_MS,
} from '#shared/limits.ts';
import { HOUR_MS } from '#shared/time.ts';
import type { ExecuteRequest } from './execute-request.ts';
import type { ExecutionRecord } from './execution-model.ts';
import type { StateMachineInput } from './state-machine-gateway.ts';
import { startExecution, type PlannedExecution, type StartDeps } from './execution-service.ts';
import type { IdempotencyRepository, KeyReservation, Lease } from './idempotency-repository.ts';
import { requestFingerprint } from './request-fingerprint.ts';

/*
 * Idempotent starts: an `Idempotency-Key` names one execution per project for IDEMPOTENCY_KEY_RETENTION_MS. Our own
 * conditional write rather than Powertools' Idempotency utility, which stores a handler's finished result and refuses a
 * concurrent call while the first is in progress: here the result is an execution that goes on after the request (for up to
 * 7 days at an approval), a second request must join it rather than be refused, and what it answers (the execution's
 * state, its stream) is read fresh, not replayed.
 *
 * The execution id (and the thread and creation time) are made before the key is reserved, so the reservation names
 * the execution from its first moment and a request that finds the key never has to guess which run is meant. The
 * reservation says `started` only after the state machine has started: a request that joins never joins an execution that is
 * not going to happen.
 *
 * A request that dies on the way (its function timed out or crashed) leaves the key naming its execution, in the state it
 * reached (idempotency-repository.ts), and its retry is owed that execution within seconds. So the key is held on a lease
 * sized to the start (a few round trips), not to the invocation, which may last 15 minutes on the streaming route: once
 * the lease has passed, a retry of the same request takes the key over under a lease of its own and finishes starting
 * that same execution. It writes the same items again if the start was never sent, or sends the same start again (same
 * execution name and input, which Step Functions answers with the one execution of that name) if it may have been.
 *
 * Nobody can tell a dead holder from a slow one, so a slow holder stops by itself: it goes on to each step of the
 * start (the execution's items, `launching`, StartExecution, `started`) only while its lease has a margin left, so that what
 * it sent has landed before anyone may take the key over, and every write it makes to the key names its lease, so once
 * the key is taken over it can change nothing there. It then answers 503 and leaves the key as it is, for the request
 * that took it over. The start both may send is the same start. A retry never starts a second run, and never loses the
 * run a first answer named.
 */

export interface StartOnceDeps extends StartDeps {
  idempotency: IdempotencyRepository;
}

/** The execution a start request is answered with: `started` when this request started it; without it, the execution its key named. */
export type RequestedExecution = { executionId: string; started: ExecutionRecord } | { executionId: string; started?: undefined };

export interface StartOptions {
  /** The request's `Idempotency-Key`, already validated; without one every request starts an execution. */
  key: string | undefined;
  /**
   * When the invocation handling this request ends for certain (its deadline): a lease it takes ends no later than that plus
   * IDEMPOTENT_START_LEASE_MARGIN_MS.
   */
  invocationDeadlineMs: number;
}

/** This request's hold on the key while it drives the start of the key's run. */
interface KeyHold {
  projectId: string;
  key: string;
  executionId: string;
  lease: Lease;
  /** Set once this request has found the lease passed or taken over: it no longer touches the key or the execution. */
  lost: boolean;
}

/** Why a request stopped driving a start it held: it answers 503 and leaves the key to the one that takes it over. */
class LeaseLost extends Error {
  override readonly name = 'LeaseLost';
}

/**
 * Starts the execution, or with a key already used by this project in the last 24 hours for the same request, answers that
 * key's run. Requests racing with one new key start one execution: one reserves the key, the others wait (reading the key,
 * at most IDEMPOTENT_START_WAIT_MS) until it says the execution started, then join it. A first request that is refused or
 * certainly started nothing (4xx; 503 before StartExecution was sent, or when Step Functions refused it) frees the key,
 * so its retry starts anew; one whose StartExecution failed without saying whether it started (503) hands the key back
 * as it is, and its retry sends the same start again at once; one that died, or was too slow, before saying its execution
 * started leaves the key to a retry, which finishes starting that execution once its lease has passed.
 */
export async function startOrJoin(
  deps: StartOnceDeps,
  caller: Caller,
  workflowId: string,
  request: ExecuteRequest,
  options: StartOptions,
): Promise<RequestedExecution> {
  const { key } = options;
  if (key === undefined) {
    const started = await startExecution(deps, caller, workflowId, request);
    return { executionId: started.execution_id, started };
  }
  const projectId = caller.projectId;
  const requestSha256 = requestFingerprint(workflowId, request);
  const newLease = (): Lease => ({
    id: randomUUID(),
    untilMs: Math.min(deps.now() + IDEMPOTENT_START_LEASE_MS, options.invocationDeadlineMs + IDEMPOTENT_START_LEASE_MARGIN_MS),
  });
  const giveUpAtMs = deps.now() + IDEMPOTENT_START_WAIT_MS;
  let pause = IDEMPOTENT_START_POLL_FIRST_MS;
  const waitABit = async () => {
    if (deps.now() >= giveUpAtMs) throw stillStarting();
    await deps.sleep(pause);
    pause = Math.min(IDEMPOTENT_START_POLL_MAX_MS, Math.ceil(pause * 1.5));
  };
  let holder: KeyReservation | undefined;
  for (;;) {
    if (!holder) {
      const now = deps.now();
      const planned: PlannedExecution = { executionId: randomUUID(), threadId: request.thread_id ?? randomUUID(), createdAtMs: now };
      const lease = newLease();
      const outcome = await deps.idempotency.reserve(
        {
          projectId,
          key,
          executionId: planned.executionId,
          requestSha256,
          threadId: planned.threadId,
          createdAtMs: now,
          lease,
          expiresAtMs: now + IDEMPOTENCY_KEY_RETENTION_MS,
        },
        now,
      );
      if (outcome.reserved)
        return startReserved(
          deps,
          caller,
          workflowId,
          request,
          { projectId, key, executionId: planned.executionId, lease, lost: false },
          planned,
        );
      // DynamoDB answers a refused write with the item that refused it; a read covers a store that did not.
      holder = outcome.existing ?? (await deps.idempotency.find(projectId, key, deps.now()));
      if (!holder) {
        // Freed by a first request that was refused or failed to start, or expired, between the write and the read:
        // reserving it again decides who starts. The pause bounds the loop.
        await waitABit();
        continue;
      }
    }
    assertSameRequest(holder, requestSha256);
    if (holder.state === 'started') return { executionId: holder.execution_id };
    if (leasePassed(holder, deps.now())) {
      const lease = newLease();
      if (await deps.idempotency.takeOver(projectId, key, holder, lease, deps.now())) {
        return finishStart(
          deps,
          caller,
          workflowId,
          request,
          { projectId, key, executionId: holder.execution_id, lease, lost: false },
          holder,
        );
      }
    }
    // Still starting under a live lease, or taken over by another retry (which is finishing the start): look again after a pause.
    await waitABit();
    holder = await deps.idempotency.find(projectId, key, deps.now());
  }
}

/**
 * Starts the reserved execution. A start that certainly started nothing frees the key again, and only once the key is free are
 * its items taken back: a key that could not be freed keeps them for the retry that finishes the start. A StartExecution
 * that failed without proving it started nothing (its answer may be what was lost, while the execution goes on) keeps the key
 * and the items and hands the key back: the next retry sends the same start, and joins the execution if it exists. A
 * request that lost its lease on the way stops there and leaves the key, and the items, to the one that took it over.
 */
async function startReserved(
  deps: StartOnceDeps,
  caller: Caller,
  workflowId: string,
  request: ExecuteRequest,
  hold: KeyHold,
  planned: PlannedExecution,
): Promise<RequestedExecution> {
  const { projectId, key, executionId, lease } = hold;
  let released: Promise<boolean> | undefined;
  let handedBack = false;
  // The caller's answer is the start's own error (a 4xx or a 503); a key left reserved only delays its retry until the
  // lease has passed, so the release may fail quietly. A key no longer held under this lease was taken over: the execution's
  // items are the start of whoever holds it now, and stay.
  const release = () =>
    (released ??= deps.idempotency.release(projectId, key, executionId, lease.id).then(
      (freed) => freed,
      (releaseError: unknown) => {
        logger.error('could not free the Idempotency-Key of an execution that did not start', {
          executionId,
          error: releaseError as Error,
        });
        return false;
      },
    ));
  let started: ExecutionRecord;
  try {
    started = await startExecution(deps, caller, workflowId, request, {
      ...planned,
      writing: () => stillHeld(deps, hold),
      launching: async (input) => {
        stillHeld(deps, hold);
        if (!(await deps.idempotency.markLaunching(projectId, key, executionId, lease.id, JSON.stringify(input)))) {
          hold.lost = true;
          throw new LeaseLost(`The Idempotency-Key of execution ${executionId} is no longer starting under this request's lease`);
        }
        stillHeld(deps, hold);
      },
      unstarted: async (mayHaveStarted) => {
        if (hold.lost) return false;
        if (!mayHaveStarted) return release();
        handedBack = true;
        await handBack(deps, hold);
        return false;
      },
    });
  } catch (error) {
    if (hold.lost) throw error instanceof LeaseLost ? unavailable(error) : error;
    if (!handedBack) await release();
    throw error;
  }
  return markStarted(deps, hold, started);
}

/**
 * Finishes the start of the execution `holder` names, whose lease passed before the execution was marked started (this request
 * has just taken the key over). `launching`: every item is written, and the start may have been sent, so the same start
 * is sent again and the one execution of that name is the execution. `starting`: the start was never sent, so nothing has
 * read the items; they are written again as the first attempt wrote them (or would have), and the execution starts.
 */
async function finishStart(
  deps: StartOnceDeps,
  caller: Caller,
  workflowId: string,
  request: ExecuteRequest,
  hold: KeyHold,
  holder: KeyReservation,
): Promise<RequestedExecution> {
  const { executionId } = hold;
  logger.warn('finishing the start of an execution whose lease passed before it was marked started', { executionId, state: holder.state });
  if (holder.state === 'launching' && holder.start_input !== undefined) {
    try {
      stillHeld(deps, hold);
      await deps.stateMachine.start(executionId, JSON.parse(holder.start_input) as StateMachineInput);
    } catch (error) {
      // Whether the first attempt's start went through is still unknown: the next retry tries again, at once.
      if (!hold.lost) await handBack(deps, hold);
      throw unavailable(error);
    }
    return markStarted(deps, hold);
  }
  const record = await deps.executions.get(executionId, true);
  if (record && record.status !== 'queued') {
    // Only a key reserved by the previous release (which had no `launching`) can name an execution that went on: it is the execution.
    return markStarted(deps, hold);
  }
  const planned: PlannedExecution = {
    executionId,
    threadId: holder.thread_id ?? record?.thread_id ?? request.thread_id ?? randomUUID(),
    createdAtMs: holder.created_at_ms ?? (record ? Date.parse(record.created_at) : deps.now()),
    again: true,
  };
  return startReserved(deps, caller, workflowId, request, hold, planned);
}

/**
 * Goes on only while this request's lease leaves its margin: past that, another request may take the key over once what
 * this one sent has landed, and it stops (LeaseLost: 503, the key left as it is).
 */
function stillHeld(deps: StartOnceDeps, hold: KeyHold): void {
  if (!hold.lost && deps.now() < hold.lease.untilMs - IDEMPOTENT_START_LEASE_MARGIN_MS) return;
  hold.lost = true;
  throw new LeaseLost(`The lease on the Idempotency-Key of execution ${hold.executionId} has passed`);
}

/**
 * This request stops driving the start without knowing whether the execution started: the key keeps naming it (and its items
 * stay), and the next retry may take it over at once. A key that cannot be handed back waits for the lease to pass
 * instead, so the failure is only logged.
 */
async function handBack(deps: StartOnceDeps, hold: KeyHold): Promise<void> {
  const { executionId } = hold;
  await deps.idempotency
    .handBack(hold.projectId, hold.key, executionId, hold.lease.id, deps.now())
    .catch((handBackError: unknown) =>
      logger.error('could not hand back the Idempotency-Key of an execution being started', { executionId, error: handBackError as Error }),
    );
}

/**
 * The execution is going: the caller gets it whatever happens here. A key left unmarked keeps repeated requests waiting until
 * the lease has passed, when one of them sends the same start again (no second run), which is why it is logged. A key
 * taken over meanwhile (this request outlived its lease while its start was on the way) names this same execution, which
 * the request that took it over is finishing: this request answers it as a joined run.
 */
async function markStarted(deps: StartOnceDeps, hold: KeyHold, started?: ExecutionRecord): Promise<RequestedExecution> {
  const { executionId } = hold;
  const marked = await deps.idempotency.markStarted(hold.projectId, hold.key, executionId, hold.lease.id).catch((markError: unknown) => {
    logger.error('could not mark the Idempotency-Key of a started execution', { executionId, error: markError as Error });
    return undefined;
  });
  if (marked === false) {
    logger.warn('the Idempotency-Key of a started execution was taken over before it was marked started', { executionId });
    return { executionId };
  }
  return started ? { executionId, started } : { executionId };
}

const leasePassed = (holder: KeyReservation, nowMs: number) => holder.state !== 'started' && (holder.starting_until_ms ?? 0) <= nowMs;

function assertSameRequest(holder: KeyReservation, requestSha256: string): void {
  if (holder.request_sha256 === requestSha256) return;
  throw new UnprocessableContentError(
    `Idempotency-Key: was used in the last ${IDEMPOTENCY_KEY_RETENTION_MS / HOUR_MS} hours for a different request (another workflow ` +
      `or body); send a new key for a new request`,
  );
}

function stillStarting(): ServiceUnavailableError {
  return new ServiceUnavailableError('The first request with this Idempotency-Key is still starting its execution; retry later');
}

/** A 503 that says only what the caller can do; the cause stays in the log. */
function unavailable(cause: unknown): ServiceUnavailableError {
  const error = new ServiceUnavailableError('The execution service is unavailable; retry later');
  error.cause = cause;
  return error;
}
