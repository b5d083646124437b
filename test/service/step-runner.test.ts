import { describe, expect, it } from 'vitest';
import { emptyCostUnits, runMetered, type Metering } from '#shared/metering/cost-meter.ts';
import { startExecution } from '#executions/execution-service.ts';
import type { StepState } from '#executions/step-state.ts';
import type { ExecuteRequest } from '#executions/execute-request.ts';
import { runStep, type StepDeps } from '#engine/step-runner.ts';
import { recordApprovalWait } from '#engine/approval-wait.ts';
import { decideApproval, stopExecution } from '#executions/execution-control.ts';
import type { ApprovalDecision } from '#executions/step-state.ts';
import { ConflictError } from '#shared/errors.ts';
import { scriptedProvider, type LlmProvider } from '#engine/llm-provider.ts';
import { awsError } from '../support/fakes/faults.ts';
import { ECHO, PROJECT, executionEnvironment } from '../support/fakes/execution-environment.ts';
import type { InMemoryContextStore } from '../support/fakes/context-store.ts';
import type { WorkflowDefinition } from '#workflows/definition-schema.ts';

/** The execution's first step, as the state machine hands it what execute started: who writes the thread's turns, and when. */
const request: ExecuteRequest = { input: { message: 'hi' }, user_id: 'user-1', overrides: {} };
/** Answers with the thread's history as the execution sees it. */
/** One approval, then the end with its feedback. */
const GATE: WorkflowDefinition = {
  id: 'gate',
  name: 'Gate',
  description: '',
  start: 'ask',
  tools: {},
  nodes: {
    ask: { type: 'approval', message: 'Proceed with {{input.message}}?', next: 'done' },
    done: { type: 'end', output: 'approved: {{approval.feedback}}' },
  },
};
const RECALL: WorkflowDefinition = {
  ...ECHO,
  id: 'recall',
  nodes: { ...ECHO.nodes, answer: { type: 'llm', provider: 'scripted', reply: 'Seen: {{history}}', next: 'done' } },
};

function setup() {
  const env = executionEnvironment();
  env.publications.seed(PROJECT, [ECHO, RECALL, GATE]);
  let modelCalls = 0;
  /** What happens in the world while the model answers (a stop, say). */
  let duringModelCall: () => Promise<void> = async () => undefined;
  const counted: LlmProvider = {
    generate: async (call) => {
      modelCalls += 1;
      await duringModelCall();
      return scriptedProvider.generate(call);
    },
  };
  const { executions, userState, publications, contexts, events, clock } = env;
  // The echo workflow calls no agent, tool or image model.
  const step: StepDeps = {
    executions,
    userState,
    publications,
    contexts,
    events,
    providers: { scripted: counted, bedrock: counted },
    agents: {} as never,
    images: {} as never,
    now: clock.now,
  };
  const started = async (extra: Partial<ExecuteRequest> = {}, workflowId = 'echo') => {
    const record = await startExecution(env.start, { projectId: PROJECT }, workflowId, { ...request, ...extra });
    return { record, state: env.stateMachine.executions.get(record.execution_id)!.input as StepState };
  };
  const thread = (threadId: string) =>
    userState.threadOf(PROJECT, 'user-1', threadId).map(({ role, text, sequence }) => ({ role, text, sequence }));
  const whileTheModelAnswers = (action: () => Promise<void>) => (duringModelCall = action);
  return {
    clock,
    executions,
    userState,
    events,
    step,
    started,
    thread,
    whileTheModelAnswers,
    modelCalls: () => modelCalls,
    api: env.start,
    stateMachine: env.stateMachine,
  };
}

describe("an execution's first step", () => {
  it('sends the execution context read and the running mark side by side: one round trip before its first node', async () => {
    const env = setup();
    const { state } = await env.started();
    const runs = env.step.contexts as unknown as InMemoryContextStore;
    let marking = false;
    env.executions.faults.beforeNext('transition', () => void (marking = true));
    let markSentDuringRead = false;
    runs.faults.beforeNext('readContext', async () => {
      // A few turns of the event loop's microtasks, no time: a mark sent beside the read has been entered by then.
      for (let turn = 0; turn < 10 && !marking; turn++) await Promise.resolve();
      markSentDuringRead = marking;
    });
    expect(await runStep(env.step, state)).toMatchObject({ outcome: 'finished' });
    expect(markSentDuringRead).toBe(true);
  });

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

  it('writes the message itself for an execution started before execute wrote it (a cursor with no turns)', async () => {
    const env = setup();
    const { record, state } = await env.started();
    await env.userState.removeTurn(
      PROJECT,
      'user-1',
      record.thread_id,
      { role: 'user', text: 'hi', execution_id: record.execution_id, at: record.created_at },
      1,
    );
    await runStep(env.step, { ...state, cursor: { ...state.cursor, turns: 0 } });
    expect(env.thread(record.thread_id)).toEqual([
      { role: 'user', text: 'hi', sequence: 1 },
      { role: 'assistant', text: 'Echo: hi', sequence: 2 },
    ]);
  });

  it('retried after a failed reply write, leaves the message in the thread once', async () => {
    const env = setup();
    const { record, state } = await env.started();
    env.userState.faults.failNext('appendTurn', awsError('ProvisionedThroughputExceededException'));
    await expect(runStep(env.step, state)).rejects.toThrow();
    // The state machine retries the task with the same input.
    await runStep(env.step, state);
    expect(env.thread(record.thread_id)).toEqual([
      { role: 'user', text: 'hi', sequence: 1 },
      { role: 'assistant', text: 'Echo: hi', sequence: 2 },
    ]);
  });

  it('retried after it ended the execution and then failed, ends the log and still hands the callback to its execution', async () => {
    const env = setup();
    const { record, state } = await env.started({ callback_url: 'https://hooks.example.com/executions' });
    // The event log cannot be written this time: the step records the ending, then fails.
    env.events.faults.failNext('putBatch', awsError('ProvisionedThroughputExceededException'));
    await expect(runStep(env.step, state)).rejects.toThrow();
    expect(env.executions.stored(record.execution_id)).toMatchObject({ status: 'completed', callback_state: 'pending' });

    // The state machine retries the task: the execution is not run again, the log ends, and the callback is not lost.
    expect(await runStep(env.step, state)).toMatchObject({ outcome: 'finished', callback: true });
    expect(env.modelCalls()).toBe(1);
    expect(env.events.logs.get(record.execution_id)?.at(-1)).toMatchObject({ final: true });
  });

  it('takes its reply back out of the thread when the execution was stopped while the model answered', async () => {
    const env = setup();
    const { record, state } = await env.started();
    env.whileTheModelAnswers(async () => {
      await env.executions.transition(record.execution_id, ['running'], { status: 'cancelled', finished_at: record.created_at });
    });
    // The state machine waits for the stop's StopExecution (AwaitStop): the execution ends ABORTED, never SUCCEEDED.
    const metering: Metering = { units: emptyCostUnits(), startedAtMs: 0, memoryMb: 256 };
    expect(await runMetered(metering, () => runStep(env.step, state))).toEqual({
      execution_id: record.execution_id,
      cursor: expect.anything(),
      outcome: 'stopped',
    });
    // The step is settled once, where its end node found the execution stopped: RunStep, Route, Dispatch and Done.
    expect(metering.units.stateTransitions).toBe(4);
    // The message was sent, so it stays; the answer nobody was given does not join the history.
    expect(env.thread(record.thread_id)).toEqual([{ role: 'user', text: 'hi', sequence: 1 }]);
    expect(env.executions.stored(record.execution_id).status).toBe('cancelled');
  });

  it('shows the thread as it stood when the execution started: not an execution started after it', async () => {
    const env = setup();
    const first = await env.started({ thread_id: 'shared', input: { message: 'first' } }, 'recall');
    env.clock.advance(1_000);
    const second = await env.started({ thread_id: 'shared', input: { message: 'second' } }, 'echo');
    await runStep(env.step, second.state);
    env.clock.advance(1_000);

    await runStep(env.step, first.state);
    expect(env.executions.stored(first.record.execution_id)).toMatchObject({ status: 'completed', output: 'Seen: ' });
    env.clock.advance(1_000);
    const third = await env.started({ thread_id: 'shared', input: { message: 'third' } }, 'recall');
    await runStep(env.step, third.state);
    // The third run started after both: it sees them, in the order they were written.
    expect(env.executions.stored(third.record.execution_id).output).toBe(
      'Seen: user: first\nuser: second\nassistant: Echo: second\nassistant: Seen: ',
    );
  });

  it('goes no further for an execution stopped before it: no model call, no reply, the message kept', async () => {
    const env = setup();
    const { record, state } = await env.started();
    await env.executions.transition(record.execution_id, ['queued'], { status: 'cancelled', finished_at: record.created_at });
    expect(await runStep(env.step, state)).toMatchObject({ outcome: 'stopped' });
    expect(env.modelCalls()).toBe(0);
    expect(env.thread(record.thread_id)).toEqual([{ role: 'user', text: 'hi', sequence: 1 }]);
    expect(env.executions.stored(record.execution_id).status).toBe('cancelled');
  });
});

describe('an image node on Bedrock', () => {
  // Publish refuses it now (the catalog's one image model, Nova Canvas, has ended); a definition published before keeps it.
  const DRAW: WorkflowDefinition = {
    id: 'draw',
    name: 'Draw',
    description: '',
    start: 'picture',
    tools: {},
    nodes: {
      picture: {
        type: 'image',
        provider: 'bedrock',
        prompt: '{{input.message}}',
        width: 320,
        height: 320,
        model_id: 'amazon.nova-canvas-v1:0',
        next: 'done',
      },
      done: { type: 'end', output: '{{nodes.picture.output.key}}' },
    },
  };

  it('fails the execution with a clear message when the rendered prompt is outside 1-1,024 characters, before calling the model', async () => {
    const env = executionEnvironment();
    env.publications.seed(PROJECT, [DRAW]);
    const prompts: string[] = [];
    const images = {
      models: {
        scripted: {} as never,
        bedrock: { generate: async ({ prompt }: { prompt: string }) => (prompts.push(prompt), Buffer.from('png')) },
      },
      store: () => Promise.reject(new Error('no image is stored')),
    };
    const step: StepDeps = { ...env, providers: {} as never, agents: {} as never, images, now: env.clock.now };
    for (const message of ['x'.repeat(1025), '']) {
      const record = await startExecution(env.start, { projectId: PROJECT }, 'draw', { ...request, input: { message } });
      const state = env.stateMachine.executions.get(record.execution_id)!.input as StepState;
      expect(await runStep(step, state)).toMatchObject({ outcome: 'finished' });
      expect(env.executions.stored(record.execution_id)).toMatchObject({
        status: 'failed',
        error: `Image node picture: the rendered prompt is ${message.length} characters; the image model takes 1-1024`,
      });
    }
    expect(prompts).toEqual([]);
  });
});

describe('a step resumed by a decision', () => {
  /** The gate execution waiting at its approval, as RunStep and AwaitApproval leave it: the state RunStep gets back. */
  async function waiting(env: ReturnType<typeof setup>) {
    const { record, state } = await env.started({}, 'gate');
    const paused = await runStep(env.step, state);
    expect(paused).toMatchObject({ outcome: 'approval' });
    const taskToken = env.stateMachine.issueToken(record.execution_id);
    await recordApprovalWait(env.step, { execution_id: record.execution_id, approval: paused.approval!, task_token: taskToken });
    return { record, paused };
  }

  it("logs the decision before letting go of the decision's claim: a stop meanwhile answers 409, never cancels", async () => {
    const env = setup();
    const { record, paused } = await waiting(env);
    const decided = await decideApproval(env.api, { projectId: PROJECT }, record.execution_id, 'approved', 'ship');
    const sent = env.stateMachine.resumed[0]!.output as ApprovalDecision;

    // Just before the take-up's record write: the decision is in the log, and the claim still holds off a stop.
    const atTakeUp: { logged: unknown[]; stop?: unknown } = { logged: [] };
    env.executions.faults.beforeNext('transition', async () => {
      atTakeUp.logged = env.events.eventsOf(record.execution_id).map((event) => event.data.status);
      atTakeUp.stop = await stopExecution(env.api, { projectId: PROJECT }, record.execution_id).catch((caught: unknown) => caught);
    });
    expect(await runStep(env.step, { ...paused, decision: sent })).toMatchObject({ outcome: 'finished' });

    expect(atTakeUp.logged.at(-1)).toBe('approved');
    expect(atTakeUp.stop).toBeInstanceOf(ConflictError);
    const node = env.events.eventsOf(record.execution_id).find((event) => event.data.status === 'approved');
    expect(node?.data).toEqual({
      node_id: 'ask',
      type: 'approval',
      status: 'approved',
      approval_id: decided.approval_id,
      feedback: 'ship',
    });
    expect(env.executions.stored(record.execution_id)).toMatchObject({
      status: 'completed',
      output: 'approved: ship',
      approval_decision: { approval_id: decided.approval_id, decision: 'approved', delivered: true, resumed: true },
    });
  });

  it('logs the decision once: the step retried after it finished writes no second event', async () => {
    const env = setup();
    const { record, paused } = await waiting(env);
    await decideApproval(env.api, { projectId: PROJECT }, record.execution_id, 'approved', '');
    const sent = env.stateMachine.resumed[0]!.output as ApprovalDecision;
    await runStep(env.step, { ...paused, decision: sent });
    const events = env.events.eventsOf(record.execution_id).length;

    expect(await runStep(env.step, { ...paused, decision: sent })).toMatchObject({ outcome: 'finished' });
    expect(env.events.eventsOf(record.execution_id)).toHaveLength(events);
  });
});
