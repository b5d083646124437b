import { randomUUID } from 'node:crypto';
import type { Caller } from '#shared/access.ts';
import { ServiceUnavailableError, UnprocessableContentError } from '#shared/errors.ts';
import { logger } from '#shared/lambda/powertools.ts';
import {
  IDEMPOTENCY_KEY_RETENTION_MS,
  IDEMPOTENT_START_ABANDONED_MARGIN_MS,
  IDEMPOTENT_START_POLL_FIRST_MS,
  IDEMPOTENT_START_POLL_MAX_MS,
  IDEMPOTENT_START_WAIT_MS,
} from '#shared/limits.ts';
import { HOUR_MS } from '#shared/time.ts';
import type { ExecuteRequest } from './execute-request.ts';
import type { ExecutionRecord } from './execution-model.ts';
import { startExecution, type StartDeps } from './execution-service.ts';
import type { IdempotencyRepository, KeyReservation } from './idempotency-repository.ts';
import { requestFingerprint } from './request-fingerprint.ts';

/*
 * Idempotent starts: an `Idempotency-Key` names one execution per project for IDEMPOTENCY_KEY_RETENTION_MS. Our own
 * conditional write rather than Powertools' Idempotency utility, which stores a handler's finished result and refuses a
 * concurrent call while the first is in progress: here the result is a run that goes on after the request (for up to
 * 7 days at an approval), a second request must join it rather than be refused, and what it answers (the run's
 * state, its stream) is read fresh, not replayed.
 *
 * The execution id is made before the key is reserved, so the reservation names the run from its first moment and a
 * request that finds the key never has to guess which run is meant. The reservation says `started` only after the
 * state machine has started: a request that joins never joins a run that is not going to happen.
 */

export interface StartOnceDeps extends StartDeps {
  idempotency: IdempotencyRepository;
}

/** The run a start request is answered with: `started` when this request started it; without it, the run its key named. */
export type RequestedRun = { executionId: string; started: ExecutionRecord } | { executionId: string; started?: undefined };

export interface StartOptions {
  /** The request's `Idempotency-Key`, already validated; without one every request starts a run. */
  key: string | undefined;
  /** When the invocation handling this request ends for certain (its deadline): a reservation it leaves behind is abandoned then. */
  invocationDeadlineMs: number;
}

/**
 * Starts the run, or with a key already used by this project in the last 24 hours for the same request, answers that
 * key's run. Requests racing with one new key start one run: one reserves the key, the others wait (reading the key,
 * at most IDEMPOTENT_START_WAIT_MS) until it says the run started, then join it. A first request that is refused or
 * fails to start (4xx, 503) frees the key, so its retry starts anew; one that died before saying so leaves the key
 * to be taken over once its invocation has certainly ended.
 */
export async function startOrJoin(deps: StartOnceDeps, caller: Caller, workflowId: string, request: ExecuteRequest, options: StartOptions): Promise<RequestedRun> {
  const { key } = options;
  if (key === undefined) {
    const started = await startExecution(deps, caller, workflowId, request);
    return { executionId: started.execution_id, started };
  }
  const projectId = caller.projectId;
  const requestSha256 = requestFingerprint(workflowId, request);
  const executionId = randomUUID();
  const giveUpAtMs = deps.now() + IDEMPOTENT_START_WAIT_MS;
  let pause = IDEMPOTENT_START_POLL_FIRST_MS;
  const waitABit = async () => {
    if (deps.now() >= giveUpAtMs) throw stillStarting();
    await deps.sleep(pause);
    pause = Math.min(IDEMPOTENT_START_POLL_MAX_MS, Math.ceil(pause * 1.5));
  };
  for (;;) {
    const now = deps.now();
    const outcome = await deps.idempotency.reserve(
      {
        projectId,
        key,
        executionId,
        requestSha256,
        startingUntilMs: options.invocationDeadlineMs + IDEMPOTENT_START_ABANDONED_MARGIN_MS,
        expiresAtMs: now + IDEMPOTENCY_KEY_RETENTION_MS,
      },
      now,
    );
    if (outcome.reserved) return { executionId, started: await startReserved(deps, caller, workflowId, request, key, executionId) };
    // DynamoDB answers a refused write with the item that refused it; a read covers a store that did not.
    let holder = outcome.existing ?? (await deps.idempotency.find(projectId, key, deps.now()));
    while (holder?.state === 'starting' && !isAbandoned(holder, deps.now())) {
      assertSameRequest(holder, requestSha256);
      await waitABit();
      holder = await deps.idempotency.find(projectId, key, deps.now());
    }
    if (holder?.state === 'started') {
      assertSameRequest(holder, requestSha256);
      return { executionId: holder.execution_id };
    }
    // Freed by a first request that was refused or failed to start, expired, or abandoned by a request that died
    // before its run started: reserving it again decides who starts. The pause bounds the loop.
    await waitABit();
  }
}

/** Starts the reserved run; a start that fails frees the key again, since nothing ran under it. */
async function startReserved(deps: StartOnceDeps, caller: Caller, workflowId: string, request: ExecuteRequest, key: string, executionId: string): Promise<ExecutionRecord> {
  let started: ExecutionRecord;
  try {
    started = await startExecution(deps, caller, workflowId, request, executionId);
  } catch (error) {
    // The caller's answer is the start's own error (a 4xx or a 503); a key left reserved only delays its retry until
    // this invocation's deadline has passed, so the release may fail quietly.
    await deps.idempotency
      .release(caller.projectId, key, executionId)
      .catch((releaseError: unknown) => logger.error('could not free the Idempotency-Key of a run that did not start', { executionId, error: releaseError as Error }));
    throw error;
  }
  // The run is going: the caller gets it whatever happens here. A key left `starting` keeps repeated requests
  // waiting, and after this invocation's deadline lets one start a second run, which is why this is logged loudly.
  const marked = await deps.idempotency.markStarted(caller.projectId, key, executionId).catch((markError: unknown) => {
    logger.error('could not mark the Idempotency-Key of a started run', { executionId, error: markError as Error });
    return true;
  });
  if (!marked) logger.error('the Idempotency-Key of a started run names another execution', { executionId });
  return started;
}

const isAbandoned = (holder: KeyReservation, nowMs: number) => holder.state === 'starting' && (holder.starting_until_ms ?? 0) <= nowMs;

function assertSameRequest(holder: KeyReservation, requestSha256: string): void {
  if (holder.request_sha256 === requestSha256) return;
  throw new UnprocessableContentError(
    `Idempotency-Key: was used in the last ${IDEMPOTENCY_KEY_RETENTION_MS / HOUR_MS} hours for a different request (another workflow or body); send a new key for a new request`,
  );
}

function stillStarting(): ServiceUnavailableError {
  return new ServiceUnavailableError('The first request with this Idempotency-Key is still starting its run; retry later');
}
