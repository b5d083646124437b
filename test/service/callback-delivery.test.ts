import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { reconcileEndedExecution } from '#engine/execution-reconciler.ts';
import { abandonPendingCallback, CallbackDeliveryError, deliverCallback, type CallbackDeps } from '#executions/callback-delivery.ts';
import { executionView, type ExecutionRecord } from '#executions/execution-model.ts';
import { epochSeconds } from '#shared/time.ts';
import { ManualClock } from '../support/fakes/clock.ts';
import { InMemoryExecutionsRepository } from '../support/fakes/executions-repository.ts';
import { awsError } from '../support/fakes/faults.ts';
import { FakeStateMachine } from '../support/fakes/state-machine.ts';
import { InMemoryStreamEventsRepository } from '../support/fakes/stream-events-repository.ts';

const RECEIVER = 'http://127.0.0.1:9/hook';

/** How many times the state machine runs DeliverCallback before GiveUpCallback: its first attempt and the States.ALL retries. */
const DELIVERY_ATTEMPTS = (() => {
  const asl = JSON.parse(readFileSync(new URL('../../statemachines/workflow.asl.json', import.meta.url), 'utf8'));
  const retriers: { ErrorEquals: string[]; MaxAttempts: number }[] = asl.States.DeliverCallback.Retry;
  return 1 + retriers.find((retrier) => retrier.ErrorEquals.includes('States.ALL'))!.MaxAttempts;
})();

/** A callback receiver answering each request with the next of `answers` (the last one repeats); an Error is a failed connection. */
function receiver(...answers: (number | Error)[]) {
  const requests: { url: string; init: RequestInit }[] = [];
  const fetch = (async (url: string | URL | Request, init?: RequestInit) => {
    requests.push({ url: typeof url === 'string' ? url : url instanceof URL ? url.href : url.url, init: init ?? {} });
    const answer = answers[Math.min(requests.length - 1, answers.length - 1)]!;
    if (answer instanceof Error) throw answer;
    return new Response(answer === 204 ? null : 'receiver says', { status: answer });
  }) as typeof globalThis.fetch;
  const headers = (i: number) => requests[i]!.init.headers as Record<string, string>;
  return { fetch, requests, headers };
}

function setup(answers: (number | Error)[], options: { allowLoopbackCallbacks?: boolean } = {}) {
  const clock = new ManualClock();
  const executions = new InMemoryExecutionsRepository();
  const receiving = receiver(...answers);
  const deps: CallbackDeps = {
    executions,
    allowLoopbackCallbacks: options.allowLoopbackCallbacks ?? true,
    now: clock.now,
    fetch: receiving.fetch,
  };
  return { deps, clock, executions, receiving };
}

function finishedRun(executions: InMemoryExecutionsRepository, extra: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return executions.seed({
    execution_id: `exec-${executions.items.size + 1}`,
    project_id: 'project-a',
    publication_id: 'pub_a',
    workflow_id: 'echo',
    user_id: 'user-1',
    thread_id: 'thread-1',
    status: 'completed',
    output: 'Echo: hi',
    error: null,
    total_steps: 2,
    created_at: '2025-03-10T11:59:58.000Z',
    finished_at: '2025-03-10T11:59:59.500Z',
    pending_approval: null,
    task_token: null,
    callback_url: RECEIVER,
    webhook_secret: 'whsec_c2VjcmV0LXNpZ25pbmcta2V5LTMyLWJ5dGVzISE=',
    callback_state: 'pending',
    ...extra,
  });
}

/** The state machine's callback path: DeliverCallback with its retries, then GiveUpCallback. Answers what happened. */
async function deliverOrGiveUp(deps: CallbackDeps, executionId: string) {
  const failures: Error[] = [];
  for (let attempt = 1; attempt <= DELIVERY_ATTEMPTS; attempt += 1) {
    try {
      return { ...(await deliverCallback(deps, executionId)), failures };
    } catch (error) {
      failures.push(error as Error);
    }
  }
  return { delivered: false, gaveUp: await abandonPendingCallback(deps.executions, executionId), failures };
}

describe('deliverCallback', () => {
  it('posts the status response once, signed, with a webhook id stable across attempts, and records the delivery', async () => {
    const env = setup([204]);
    const run = finishedRun(env.executions);

    expect(await deliverCallback(env.deps, run.execution_id)).toEqual({ delivered: true });
    expect(env.receiving.requests).toHaveLength(1);
    const [sent] = env.receiving.requests;
    expect(sent).toMatchObject({ url: RECEIVER, init: { method: 'POST', redirect: 'manual' } });
    expect(JSON.parse(sent!.init.body as string)).toEqual(JSON.parse(JSON.stringify(executionView(run, env.clock.now()))));
    expect(env.receiving.headers(0)).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': `msg_${run.execution_id}`,
      'webhook-timestamp': String(epochSeconds(env.clock.now())),
    });
    expect(env.receiving.headers(0)['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(env.executions.stored(run.execution_id).callback_state).toBe('delivered');
  });

  it('sends nothing for an execution without a callback, or whose callback was already delivered', async () => {
    const env = setup([204]);
    const none = finishedRun(env.executions, { callback_url: null, callback_state: 'none' });
    const done = finishedRun(env.executions, { callback_state: 'delivered' });
    expect(await deliverCallback(env.deps, none.execution_id)).toEqual({ delivered: false, reason: 'no callback' });
    expect(await deliverCallback(env.deps, done.execution_id)).toEqual({ delivered: true });
    expect(env.receiving.requests).toHaveLength(0);
    expect(env.executions.stored(none.execution_id).callback_state).toBe('none');
  });

  it.each([
    ['answers 500', 500, 'Callback receiver answered 500'],
    ['answers a redirect, which is not followed', 302, 'Callback receiver answered 302'],
    ['cannot be reached', new TypeError('fetch failed'), 'Callback request failed: fetch failed'],
  ] as const)('throws CallbackDeliveryError, for the state machine to retry, when the receiver %s', async (_label, answer, message) => {
    const env = setup([answer]);
    const run = finishedRun(env.executions);
    const error = await deliverCallback(env.deps, run.execution_id).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CallbackDeliveryError);
    expect((error as Error).name).toBe('CallbackDeliveryError');
    expect((error as Error).message).toBe(message);
    expect(env.executions.stored(run.execution_id).callback_state).toBe('pending');
  });

  it('abandons at once, without a request, a callback whose URL is no longer allowed', async () => {
    const env = setup([204], { allowLoopbackCallbacks: false });
    const run = finishedRun(env.executions);
    const result = await deliverCallback(env.deps, run.execution_id);
    expect(result.delivered).toBe(false);
    expect(result.reason).toMatch(/^callback_url /);
    expect(env.receiving.requests).toHaveLength(0);
    expect(env.executions.stored(run.execution_id).callback_state).toBe('abandoned');
  });

  it('delivers again when recording the delivery failed: the receiver sees the same webhook id twice', async () => {
    const env = setup([204]);
    const run = finishedRun(env.executions);
    env.executions.faults.failNext('setCallbackState', awsError('ThrottlingException'));

    const result = await deliverOrGiveUp(env.deps, run.execution_id);
    expect(result).toMatchObject({ delivered: true });
    expect(result.failures.map((error) => error.name)).toEqual(['ThrottlingException']);
    expect(env.receiving.requests).toHaveLength(2);
    expect(env.receiving.headers(1)['webhook-id']).toBe(env.receiving.headers(0)['webhook-id']);
    expect(env.executions.stored(run.execution_id).callback_state).toBe('delivered');
  });
});

describe('giving a callback up', () => {
  it(`gives up after the state machine's ${DELIVERY_ATTEMPTS} attempts and records the callback abandoned, once`, async () => {
    const env = setup([503, new TypeError('fetch failed'), 500]);
    const run = finishedRun(env.executions);

    const result = await deliverOrGiveUp(env.deps, run.execution_id);
    expect(result).toMatchObject({ delivered: false, gaveUp: true });
    expect(result.failures).toHaveLength(DELIVERY_ATTEMPTS);
    expect(result.failures.every((error) => error instanceof CallbackDeliveryError)).toBe(true);
    expect(env.receiving.requests).toHaveLength(DELIVERY_ATTEMPTS);
    expect(new Set(env.receiving.requests.map((_, i) => env.receiving.headers(i)['webhook-id']))).toEqual(
      new Set([`msg_${run.execution_id}`]),
    );
    expect(env.executions.stored(run.execution_id)).toEqual({ ...run, callback_state: 'abandoned' });

    // A repeated GiveUpCallback (a retried invocation) finds nothing pending and changes nothing.
    expect(await abandonPendingCallback(env.executions, run.execution_id)).toBe(false);
    expect(env.executions.stored(run.execution_id).callback_state).toBe('abandoned');
  });

  it('does not give up a receiver that recovers before the attempts run out', async () => {
    const env = setup([500, 500, 204]);
    const run = finishedRun(env.executions);
    expect(await deliverOrGiveUp(env.deps, run.execution_id)).toMatchObject({ delivered: true });
    expect(env.receiving.requests).toHaveLength(3);
    expect(env.executions.stored(run.execution_id).callback_state).toBe('delivered');
  });

  it('never overwrites a delivery, and leaves the callback of an execution that has not finished alone', async () => {
    const env = setup([204]);
    const delivered = finishedRun(env.executions, { callback_state: 'delivered' });
    const running = finishedRun(env.executions, { status: 'running', finished_at: null });
    expect(await abandonPendingCallback(env.executions, delivered.execution_id)).toBe(false);
    expect(await abandonPendingCallback(env.executions, running.execution_id)).toBe(false);
    expect(env.executions.stored(delivered.execution_id).callback_state).toBe('delivered');
    expect(env.executions.stored(running.execution_id).callback_state).toBe('pending');
  });

  it('leaves a give-up that could not be written to the execution-ended reconciler (CallbackAbandoned)', async () => {
    const env = setup([500]);
    const completed = finishedRun(env.executions);
    const cancelled = finishedRun(env.executions, { status: 'cancelled' });
    const stateMachine = new FakeStateMachine();
    for (const run of [completed, cancelled]) {
      // GiveUpCallback cannot write (in the state machine: through all its retries), so the execution ends in CallbackNotRecorded.
      env.executions.faults.failNext('transition', awsError('ThrottlingException'), 1);
      const gaveUp = await deliverOrGiveUp(env.deps, run.execution_id).catch((error: Error) => error);
      expect((gaveUp as Error).name).toBe('ThrottlingException');
      expect(env.executions.stored(run.execution_id).callback_state).toBe('pending');
    }

    const reconcilerDeps = { executions: env.executions, events: new InMemoryStreamEventsRepository(), stateMachine, now: env.clock.now };
    const ended = (name: string) =>
      reconcileEndedExecution(reconcilerDeps, { name, status: 'FAILED', error: 'CallbackAbandoned', cause: null });
    expect(await ended(completed.execution_id)).toEqual({ execution_id: completed.execution_id, outcome: 'callback_abandoned' });
    expect(env.executions.stored(completed.execution_id)).toEqual({ ...completed, callback_state: 'abandoned' });
    // A cancelled run's callback belongs to the callback execution its stop started: only that one's end abandons it.
    expect(await ended(cancelled.execution_id)).toEqual({ execution_id: cancelled.execution_id, outcome: 'unchanged' });
    expect(env.executions.stored(cancelled.execution_id).callback_state).toBe('pending');
    expect(await ended(`callback-${cancelled.execution_id}`)).toEqual({
      execution_id: cancelled.execution_id,
      outcome: 'callback_abandoned',
    });
    expect(env.executions.stored(cancelled.execution_id).callback_state).toBe('abandoned');
    expect(stateMachine.startedNames()).toEqual([]);
  });
});
