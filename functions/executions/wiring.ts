import { dynamo } from '#shared/clients/dynamodb.ts';
import { sfn } from '#shared/clients/sfn.ts';
import { optionalFlag, requireEnv } from '#shared/config.ts';
import { BUCKET_ENV, STATE_MACHINE_ENV, TABLE_ENV } from '#shared/resources.ts';
import { publicationsFromEnv } from '#workflows/wiring.ts';
import { createUserStateRepository } from './user-state-repository.ts';
import type { ExecutionDeps, StartDeps } from './execution-service.ts';
import { createExecutionsRepository } from './executions-repository.ts';
import { createIdempotencyRepository } from './idempotency-repository.ts';
import type { StartOnceDeps } from './idempotency-service.ts';
import { createContextStore } from './context-store.ts';
import { createStreamEventsRepository } from './stream-events-repository.ts';
import type { TailDeps } from './execution-streams.ts';
import { createExecutionValues, type ObjectStore } from './execution-values.ts';
import { createSettleTimes } from './settle-polling.ts';
import { createStateMachine } from './state-machine-gateway.ts';

/** Dependencies built from a function's environment; each reads only what its function is given, failing at cold start otherwise. */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Large run values in the bodies bucket (`executions/` prefix). Most requests never meet one, so the S3 client
 * is loaded on the first large value, not at cold start.
 */
function executionValuesFromEnv() {
  const bucket = requireEnv(BUCKET_ENV.bodies);
  let objects: Promise<ObjectStore> | undefined;
  const load = () =>
    (objects ??= Promise.all([import('#shared/clients/s3.ts'), import('./execution-values-s3.ts')]).then(
      ([{ s3 }, { createS3ObjectStore }]) => createS3ObjectStore(s3, bucket),
    ));
  return createExecutionValues({ put: async (key, json) => (await load()).put(key, json), get: async (key) => (await load()).get(key) });
}

export function executionsFromEnv() {
  return createExecutionsRepository(dynamo, requireEnv(TABLE_ENV.executions), executionValuesFromEnv());
}

/** The stream event log (what the streaming routes show), in its own table: tailing reads it and nothing else. */
export function streamEventsFromEnv() {
  return createStreamEventsRepository(dynamo, requireEnv(TABLE_ENV.streamEvents));
}

/** Pauses between reads of a tail end at once when the caller goes away. */
function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** Following an execution's log: the stream events table only. */
export function streamTailFromEnv(): TailDeps {
  return { events: streamEventsFromEnv(), now: Date.now, sleep: sleepUnlessAborted };
}

export function contextStoreFromEnv() {
  return createContextStore(dynamo, requireEnv(TABLE_ENV.executions), executionValuesFromEnv());
}

/** For routes that read executions only (GET): no state machine needed. */
export function executionReadsFromEnv() {
  return { executions: executionsFromEnv(), now: Date.now };
}

export function userStateFromEnv() {
  return createUserStateRepository(dynamo, requireEnv(TABLE_ENV.userState), executionValuesFromEnv());
}

export function executionServiceFromEnv(): ExecutionDeps {
  const stateMachineArn = requireEnv(STATE_MACHINE_ENV);
  return {
    executions: executionsFromEnv(),
    stateMachine: createStateMachine(sfn, stateMachineArn),
    stateMachineArn,
    events: streamEventsFromEnv(),
    sleep,
    now: Date.now,
    settleTimes: createSettleTimes(),
  };
}

export function executionStartFromEnv(): StartOnceDeps {
  const start: StartDeps = {
    ...executionServiceFromEnv(),
    publications: publicationsFromEnv(),
    userState: userStateFromEnv(),
    contexts: contextStoreFromEnv(),
    allowLoopbackCallbacks: optionalFlag('ALLOW_LOOPBACK_CALLBACKS'),
  };
  // Idempotency-Key reservations are items of the executions table (`idempotency#<project>#<key>`): the routes that
  // start runs already read and write it, so keys need no table, variable or grant of their own.
  return { ...start, idempotency: createIdempotencyRepository(dynamo, requireEnv(TABLE_ENV.executions)) };
}

/** DeliverCallback: the executions (large outputs too), the loopback switch for local receivers, a clock and fetch. */
export function callbackDeliveryFromEnv() {
  return { executions: executionsFromEnv(), allowLoopbackCallbacks: optionalFlag('ALLOW_LOOPBACK_CALLBACKS'), now: Date.now, fetch };
}
