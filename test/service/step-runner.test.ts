import { describe, expect, it } from 'vitest';
import { startExecution } from '#executions/execution-service.ts';
import type { StepState } from '#executions/step-state.ts';
import type { ExecuteRequest } from '#executions/execute-request.ts';
import { runStep, type StepDeps } from '#engine/step-runner.ts';
import { scriptedProvider, type LlmProvider } from '#engine/llm-provider.ts';
import { awsError } from '../support/fakes/faults.ts';
import { PROJECT, runEnvironment } from '../support/fakes/run-environment.ts';

/** The run's first step, as the state machine hands it what execute started: who writes the thread's turns, and when. */
const request: ExecuteRequest = { input: { message: 'hi' }, user_id: 'user-1', overrides: {} };

function setup() {
  const env = runEnvironment();
  let modelCalls = 0;
  const counted: LlmProvider = {
    generate: (call) => {
      modelCalls += 1;
      return scriptedProvider.generate(call);
    },
  };
  const { executions, conversations, publications, runs, events, clock } = env;
  // The echo workflow calls no agent, tool or image model.
  const step: StepDeps = { executions, conversations, publications, runs, events, providers: { scripted: counted, bedrock: counted }, agents: {} as never, images: {} as never, now: clock.now };
  const started = async (extra: Partial<ExecuteRequest> = {}) => {
    const record = await startExecution(env.start, { projectId: PROJECT }, 'echo', { ...request, ...extra });
    return { record, state: env.stateMachine.executions.get(record.execution_id)!.input as StepState };
  };
  const thread = (threadId: string) => conversations.threadOf(PROJECT, 'user-1', threadId).map(({ role, text, sequence }) => ({ role, text, sequence }));
  return { executions, conversations, events, step, started, thread, modelCalls: () => modelCalls };
}

describe("a run's first step", () => {
  it("writes the reply after the user's message execute wrote, not the message again", async () => {
    const env = setup();
    const { record, state } = await env.started();
    expect(await runStep(env.step, state)).toMatchObject({ outcome: 'finished' });
    expect(env.thread(record.thread_id)).toEqual([
      { role: 'user', text: 'hi', sequence: 1 },
      { role: 'assistant', text: 'Echo: hi', sequence: 2 },
    ]);
    expect(env.executions.stored(record.execution_id)).toMatchObject({ status: 'completed', output: 'Echo: hi' });
  });

  it('writes the message itself for a run started before execute wrote it (a cursor with no turns)', async () => {
    const env = setup();
    const { record, state } = await env.started();
    await env.conversations.removeTurn(PROJECT, 'user-1', record.thread_id, { role: 'user', text: 'hi', execution_id: record.execution_id, at: record.created_at }, 1);
    await runStep(env.step, { ...state, cursor: { ...state.cursor, turns: 0 } });
    expect(env.thread(record.thread_id)).toEqual([
      { role: 'user', text: 'hi', sequence: 1 },
      { role: 'assistant', text: 'Echo: hi', sequence: 2 },
    ]);
  });

  it('retried after a failed reply write, leaves the message in the thread once', async () => {
    const env = setup();
    const { record, state } = await env.started();
    env.conversations.faults.failNext('appendTurn', awsError('ProvisionedThroughputExceededException'));
    await expect(runStep(env.step, state)).rejects.toThrow();
    // The state machine retries the task with the same input.
    await runStep(env.step, state);
    expect(env.thread(record.thread_id)).toEqual([
      { role: 'user', text: 'hi', sequence: 1 },
      { role: 'assistant', text: 'Echo: hi', sequence: 2 },
    ]);
  });

  it('retried after it ended the run and then failed, ends the log and still hands the callback to its execution', async () => {
    const env = setup();
    const { record, state } = await env.started({ callback_url: 'https://hooks.example.com/runs' });
    // The event log cannot be written this time: the step records the ending, then fails.
    env.events.faults.failNext('putBatch', awsError('ProvisionedThroughputExceededException'));
    await expect(runStep(env.step, state)).rejects.toThrow();
    expect(env.executions.stored(record.execution_id)).toMatchObject({ status: 'completed', callback_state: 'pending' });

    // The state machine retries the task: the run is not run again, the log ends, and the callback is not lost.
    expect(await runStep(env.step, state)).toMatchObject({ outcome: 'finished', callback: true });
    expect(env.modelCalls()).toBe(1);
    expect(env.events.logs.get(record.execution_id)?.at(-1)).toMatchObject({ final: true });
  });

  it('goes no further for a run stopped before it: no model call, no reply, the message kept', async () => {
    const env = setup();
    const { record, state } = await env.started();
    await env.executions.transition(record.execution_id, ['queued'], { status: 'cancelled', finished_at: record.created_at });
    expect(await runStep(env.step, state)).toMatchObject({ outcome: 'finished', callback: false });
    expect(env.modelCalls()).toBe(0);
    expect(env.thread(record.thread_id)).toEqual([{ role: 'user', text: 'hi', sequence: 1 }]);
    expect(env.executions.stored(record.execution_id).status).toBe('cancelled');
  });
});
