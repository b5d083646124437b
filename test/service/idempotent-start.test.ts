import { describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '#executions/execute-request.ts';
import { startOrJoin, type StartOnceDeps } from '#executions/idempotency-service.ts';
import { requestFingerprint } from '#executions/request-fingerprint.ts';
import { NotFoundError, ServiceUnavailableError, UnprocessableContentError } from '#shared/errors.ts';
import { IDEMPOTENCY_KEY_RETENTION_MS, IDEMPOTENT_START_ABANDONED_MARGIN_MS, IDEMPOTENT_START_WAIT_MS } from '#shared/limits.ts';
import { ttlSeconds } from '#shared/time.ts';
import { awsError } from '../support/fakes/faults.ts';
import { InMemoryIdempotencyRepository } from '../support/fakes/idempotency-repository.ts';
import { ECHO, PROJECT, runEnvironment } from '../support/fakes/run-environment.ts';

const KEY = 'order-1234';
const request = (message = 'hi'): ExecuteRequest => ({ input: { message }, user_id: 'user-1', overrides: {} });

function setup() {
  const env = runEnvironment();
  const idempotency = new InMemoryIdempotencyRepository();
  // Every pause lets everything else pending run first (a macrotask turn), then moves the clock: a request that waits
  // for another sees it make progress, whatever the machine's speed.
  const sleep = async (ms: number) => {
    await new Promise((resolve) => setImmediate(resolve));
    env.clock.advance(ms);
  };
  const deps: StartOnceDeps = { ...env.start, sleep, idempotency };
  const invocationDeadlineMs = env.clock.now() + 60_000;
  const start = (options: { key?: string; body?: ExecuteRequest; workflowId?: string; project?: string } = {}) =>
    startOrJoin(deps, { projectId: options.project ?? PROJECT }, options.workflowId ?? 'echo', options.body ?? request(), {
      key: 'key' in options ? options.key : KEY,
      invocationDeadlineMs,
    });
  return { ...env, idempotency, deps, start };
}

describe('startOrJoin', () => {
  it('starts a run for a new key and marks the key started with its execution', async () => {
    const env = setup();
    const run = await env.start();

    expect(run.started?.execution_id).toBe(run.executionId);
    expect(env.stateMachine.startedNames()).toEqual([run.executionId]);
    expect(env.idempotency.held(PROJECT, KEY)).toEqual({
      execution_id: run.executionId,
      request_sha256: requestFingerprint('echo', request()),
      state: 'started',
      expires_at: ttlSeconds(env.clock.now() + IDEMPOTENCY_KEY_RETENTION_MS),
    });
  });

  it('answers the same request with the same key with that run, starting nothing', async () => {
    const env = setup();
    const first = await env.start();
    env.clock.advance(IDEMPOTENCY_KEY_RETENTION_MS - 60_000);

    const again = await env.start();

    expect(again).toEqual({ executionId: first.executionId });
    expect(env.stateMachine.startedNames()).toEqual([first.executionId]);
  });

  it('refuses the same key with another body or workflow with 422 naming the header', async () => {
    const env = setup();
    await env.start();

    for (const other of [{ body: request('something else') }, { workflowId: 'other' }]) {
      const error = await env.start(other).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(UnprocessableContentError);
      expect((error as UnprocessableContentError).statusCode).toBe(422);
      expect((error as Error).message).toMatch(/^Idempotency-Key: was used in the last 24 hours for a different request/);
    }
    expect(env.stateMachine.executions.size).toBe(1);
  });

  it('keeps keys apart per project', async () => {
    const env = setup();
    env.publications.seed('project-b', [ECHO]);
    const first = await env.start();
    const other = await env.start({ project: 'project-b' });
    expect(other.started).toBeDefined();
    expect(other.executionId).not.toBe(first.executionId);
  });

  it('starts a new run with a key whose 24 hours are over, though its item is still stored', async () => {
    const env = setup();
    const first = await env.start();
    env.clock.advance(IDEMPOTENCY_KEY_RETENTION_MS + 1000);

    const later = await env.start({ body: request('a new day') });

    expect(later.started).toBeDefined();
    expect(env.stateMachine.startedNames()).toEqual([first.executionId, later.executionId]);
  });

  it('starts one run for five first requests at once; the others join it', async () => {
    const env = setup();
    const runs = await Promise.all(Array.from({ length: 5 }, () => env.start()));

    expect(runs.filter((run) => run.started)).toHaveLength(1);
    expect(new Set(runs.map((run) => run.executionId)).size).toBe(1);
    expect(env.stateMachine.executions.size).toBe(1);
    expect(env.executions.items.size).toBe(1);
  });

  it('frees the key when the first request is refused or cannot start, so its retry starts anew', async () => {
    const env = setup();
    const refused = await env.start({ workflowId: 'missing' }).catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(NotFoundError);
    expect(env.idempotency.held(PROJECT, KEY)).toBeUndefined();

    env.stateMachine.faults.failNext('start', awsError('ServiceUnavailable'));
    const unavailable = await env.start().catch((caught: unknown) => caught);
    expect(unavailable).toBeInstanceOf(ServiceUnavailableError);
    expect(env.idempotency.held(PROJECT, KEY)).toBeUndefined();

    const retried = await env.start();
    expect(retried.started).toBeDefined();
    expect(env.stateMachine.startedNames()).toEqual([retried.executionId]);
  });

  it('takes over a key whose first request died before its run started, once that invocation has certainly ended', async () => {
    const env = setup();
    const diedAtMs = env.clock.now() + 2000;
    env.idempotency.seed(PROJECT, KEY, {
      execution_id: 'never-started',
      request_sha256: requestFingerprint('echo', request()),
      state: 'starting',
      starting_until_ms: diedAtMs + IDEMPOTENT_START_ABANDONED_MARGIN_MS,
      expires_at: ttlSeconds(env.clock.now() + IDEMPOTENCY_KEY_RETENTION_MS),
    });

    const run = await env.start();

    expect(env.clock.now()).toBeGreaterThanOrEqual(diedAtMs + IDEMPOTENT_START_ABANDONED_MARGIN_MS);
    expect(run.started).toBeDefined();
    expect(run.executionId).not.toBe('never-started');
    expect(env.idempotency.held(PROJECT, KEY)).toMatchObject({ execution_id: run.executionId, state: 'started' });
  });

  it('answers 503 when the first request is still starting its run after the wait, and starts nothing', async () => {
    const env = setup();
    const startedAt = env.clock.now();
    env.idempotency.seed(PROJECT, KEY, {
      execution_id: 'slow-start',
      request_sha256: requestFingerprint('echo', request()),
      state: 'starting',
      starting_until_ms: startedAt + 10 * 60_000,
      expires_at: ttlSeconds(startedAt + IDEMPOTENCY_KEY_RETENTION_MS),
    });

    const error = await env.start().catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect((error as Error).message).toBe('The first request with this Idempotency-Key is still starting its run; retry later');
    expect(env.clock.now() - startedAt).toBeGreaterThanOrEqual(IDEMPOTENT_START_WAIT_MS);
    expect(env.stateMachine.executions.size).toBe(0);
  });

  it('starts a run for every request without a key', async () => {
    const env = setup();
    const [a, b] = [await env.start({ key: undefined }), await env.start({ key: undefined })];
    expect(a.started && b.started).toBeTruthy();
    expect(env.stateMachine.executions.size).toBe(2);
    expect(env.idempotency.items.size).toBe(0);
  });
});
