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
import { createRunStore } from './run-store.ts';
import { createRunEventsRepository } from './run-events-repository.ts';
import type { TailDeps } from './run-event-streams.ts';
import { createRunValues, type ObjectStore } from './run-values.ts';
import { createSettleTimes } from './settle-polling.ts';
import { createStateMachine } from './state-machine-gateway.ts';

/** Dependencies built from a function's environment; each reads only what its function is given, failing at cold start otherwise. */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Large run values in the bodies bucket (`executions/` prefix). Most requests never meet one, so the S3 client
 * is loaded on the first large value, not at cold start.
 */
function runValuesFromEnv() {
  const bucket = requireEnv(BUCKET_ENV.bodies);
  let objects: Promise<ObjectStore> | undefined;
  const load = () =>
    (objects ??= Promise.all([import('#shared/clients/s3.ts'), import('./run-values-s3.ts')]).then(([{ s3 }, { createS3ObjectStore }]) =>
      createS3ObjectStore(s3, bucket),
    ));
  return createRunValues({ put: async (key, json) => (await load()).put(key, json), get: async (key) => (await load()).get(key) });
}

export function executionsFromEnv() {
  return createExecutionsRepository(dynamo, requireEnv(TABLE_ENV.executions), runValuesFromEnv());
}

/** The run event log (what the streaming routes show), in its own table: tailing reads it and nothing else. */
export function runEventsFromEnv() {
  return createRunEventsRepository(dynamo, requireEnv(TABLE_ENV.runEvents));
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

/** Following a run's log: the run events table only. */
export function runTailFromEnv(): TailDeps {
  return { events: runEventsFromEnv(), now: Date.now, sleep: sleepUnlessAborted };
}

export function runStoreFromEnv() {
  return createRunStore(dynamo, requireEnv(TABLE_ENV.executions), runValuesFromEnv());
}

/** For routes that read executions only (GET): no state machine needed. */
export function executionReadsFromEnv() {
  return { executions: executionsFromEnv(), now: Date.now };
}

export function userStateFromEnv() {
  return createUserStateRepository(dynamo, requireEnv(TABLE_ENV.conversations), runValuesFromEnv());
}

export function executionServiceFromEnv(): ExecutionDeps {
  const stateMachineArn = requireEnv(STATE_MACHINE_ENV);
  return {
    executions: executionsFromEnv(),
    stateMachine: createStateMachine(sfn, stateMachineArn),
    stateMachineArn,
    events: runEventsFromEnv(),
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
    runs: runStoreFromEnv(),
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
