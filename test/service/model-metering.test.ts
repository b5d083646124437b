import type { BedrockRuntimeClient, ConverseStreamOutput, TokenUsage } from '@aws-sdk/client-bedrock-runtime';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { startExecution } from '#executions/execution-service.ts';
import { executionView } from '#executions/execution-model.ts';
import type { StepState } from '#executions/step-state.ts';
import { createBedrockProvider } from '#engine/bedrock-provider.ts';
import { scriptedProvider } from '#engine/llm-provider.ts';
import { scriptedImageModel } from '#engine/images/scripted-image.ts';
import { runStep, type StepDeps } from '#engine/step-runner.ts';
import { emptyCostUnits, runMetered, type CostUnits, type Metering, type ModelUsage } from '#shared/metering/cost-meter.ts';
import { settleUsage } from '#shared/metering/usage-settlement.ts';
import type { WorkflowDefinition } from '#workflows/definition-schema.ts';
import { awsError } from '../support/fakes/faults.ts';
import { PROJECT, executionEnvironment } from '../support/fakes/execution-environment.ts';

/**
 * The per-model counters flow as the aggregate ones do: the providers count into the execution's cursor, each step meters
 * what its nodes added (its usage item gets a counter per model), and the finished run's record keeps them all. The
 * key is the model id the node names (`scripted` offline); the public `usage` keeps its five numbers. Images are drawn
 * by the scripted provider (the catalog serves no Bedrock image model), counted by quality and size class at $0.
 */
const PRO = 'amazon.nova-pro-v1:0';
const US_LITE = 'us.amazon.nova-lite-v1:0';
/** What a stored definition published before it ended carries on its image nodes (the old default). */
const CANVAS = 'amazon.nova-canvas-v1:0';

const MIXED: WorkflowDefinition = {
  id: 'mixed',
  name: 'Mixed',
  description: '',
  start: 'greet',
  tools: {},
  nodes: {
    greet: { type: 'llm', provider: 'scripted', reply: 'one two three', next: 'think' },
    think: { type: 'llm', provider: 'bedrock', model_id: PRO, prompt: 'Think', next: 'later' },
    later: { type: 'wait', seconds: 5, next: 'sum' },
    sum: { type: 'llm', provider: 'bedrock', model_id: US_LITE, prompt: 'Sum up', next: 'poster' },
    poster: { type: 'image', provider: 'scripted', prompt: 'A poster', width: 512, height: 512, quality: 'premium', next: 'sketch' },
    sketch: { type: 'image', provider: 'scripted', prompt: 'A sketch', width: 64, height: 64, model_id: CANVAS, next: 'done' },
    done: { type: 'end', output: '{{nodes.sum.output}}' },
  },
};

/** A Bedrock Runtime client answering each ConverseStream with a text and the model's `metadata.usage`, by model. */
function fakeBedrock(usageByModel: Record<string, Partial<TokenUsage>>) {
  const sent: { modelId: string | undefined }[] = [];
  const client = {
    send: async (command: { input: { modelId?: string } }) => {
      sent.push({ modelId: command.input.modelId });
      const usage = usageByModel[command.input.modelId ?? '']!;
      async function* stream(): AsyncGenerator<ConverseStreamOutput> {
        yield { contentBlockDelta: { contentBlockIndex: 0, delta: { text: `answer of ${command.input.modelId}` } } };
        yield { messageStop: { stopReason: 'end_turn' } };
        yield { metadata: { usage: usage as TokenUsage, metrics: { latencyMs: 1 } } };
      }
      return { stream: stream() };
    },
  } as unknown as BedrockRuntimeClient;
  return { client, sent };
}

function setup() {
  const env = executionEnvironment();
  env.publications.seed(PROJECT, [MIXED]);
  const bedrock = fakeBedrock({
    [PRO]: { inputTokens: 100, outputTokens: 20, cacheReadInputTokens: 50, cacheWriteInputTokens: 10 },
    [US_LITE]: { inputTokens: 40, outputTokens: 8 },
  });
  const images = {
    models: {
      scripted: scriptedImageModel,
      bedrock: { generate: () => Promise.reject(new Error('these runs draw no Bedrock image')) },
    },
    store: async () => ({
      put: async (executionId: string, name: string) => ({
        key: `executions/${executionId}/images/${name}.png`,
        url: 'https://s3.example/x',
        mime_type: 'image/png' as const,
      }),
    }),
  };
  const step: StepDeps = {
    ...env,
    providers: { scripted: scriptedProvider, bedrock: createBedrockProvider(bedrock.client) },
    agents: {} as never,
    images,
    now: env.clock.now,
  };
  return { env, step, bedrock };
}

/** One step invocation as its task runs it: metered, so what it spent is what its usage item would get. */
async function meteredStep(step: StepDeps, state: StepState) {
  const metering: Metering = { units: emptyCostUnits(), startedAtMs: performance.now(), memoryMb: 256 };
  const next = await runMetered(metering, () => runStep(step, state));
  return { next, metering };
}

describe('per-model metering of an execution', () => {
  it('counts each model by the id its node names, step by step, and keeps them all in the finished record', async () => {
    const { env, step, bedrock } = setup();
    const record = await startExecution(env.start, { projectId: PROJECT }, 'mixed', {
      input: { message: 'hi' },
      user_id: 'u',
      overrides: {},
    });
    const first = await meteredStep(step, env.stateMachine.executions.get(record.execution_id)!.input as StepState);
    expect(first.next).toMatchObject({ outcome: 'wait' });

    // The first step: the scripted reply's three word tokens and Nova Pro's answer, cache tokens included.
    const firstModels = {
      scripted: { output_tokens: 3 },
      [PRO]: { input_tokens: 100, output_tokens: 20, cache_read_tokens: 50, cache_write_tokens: 10 },
    };
    expect({ ...first.metering.models }).toEqual(firstModels);
    expect({ ...first.next.cursor.models }).toEqual(firstModels);
    // The aggregate counters are still counted (Bedrock's inputTokens leaves the cache tokens out).
    expect(first.metering.units).toMatchObject({ modelCalls: 2, inputTokens: 100, outputTokens: 23, images: 0 });

    // The next step meters only what its own nodes did.
    const second = await meteredStep(step, { execution_id: record.execution_id, cursor: first.next.cursor });
    expect(second.next).toMatchObject({ outcome: 'finished' });
    expect({ ...second.metering.models }).toEqual({
      [US_LITE]: { input_tokens: 40, output_tokens: 8 },
      // Scripted images are the scripted model's, by quality and size class, whatever `model_id` a stored node carries.
      scripted: { images_premium_1024: 1, images_standard_1024: 1 },
    });
    expect(second.metering.units).toMatchObject({ modelCalls: 1, inputTokens: 40, outputTokens: 8, images: 2 });
    expect(bedrock.sent.map((call) => call.modelId)).toEqual([PRO, US_LITE]);

    const stored = env.executions.stored(record.execution_id);
    expect(stored.status).toBe('completed');
    expect({ ...stored.cost_units!.models }).toEqual({
      scripted: { output_tokens: 3, images_premium_1024: 1, images_standard_1024: 1 },
      [PRO]: { input_tokens: 100, output_tokens: 20, cache_read_tokens: 50, cache_write_tokens: 10 },
      [US_LITE]: { input_tokens: 40, output_tokens: 8 },
    });
    // The stored images: one object per node and step under the execution.
    const keys = env.events
      .eventsOf(record.execution_id)
      .filter((event) => event.type === 'image')
      .map((event) => event.data.key);
    expect(keys).toEqual([
      `executions/${record.execution_id}/images/poster-5.png`,
      `executions/${record.execution_id}/images/sketch-6.png`,
    ]);
    // What callers see does not change shape.
    expect(executionView(stored, env.clock.now()).usage).toEqual({
      model_calls: 3,
      input_tokens: 140,
      output_tokens: 31,
      tool_calls: 0,
      images: 2,
    });
    const complete = env.events.eventsOf(record.execution_id).find((event) => event.type === 'complete');
    expect(complete?.data.usage).toEqual({ model_calls: 3, input_tokens: 140, output_tokens: 31, tool_calls: 0, images: 2 });
  });

  it('records no model counters for an execution whose nodes call no model', async () => {
    const { env, step } = setup();
    env.publications.seed(PROJECT, [{ ...MIXED, id: 'plain', start: 'done', nodes: { done: { type: 'end', output: 'ok' } } }]);
    const record = await startExecution(env.start, { projectId: PROJECT }, 'plain', {
      input: { message: 'hi' },
      user_id: 'u',
      overrides: {},
    });
    const { next, metering } = await meteredStep(step, env.stateMachine.executions.get(record.execution_id)!.input as StepState);
    expect(next).toMatchObject({ outcome: 'finished' });
    expect(metering.models).toBeUndefined();
    expect(next.cursor.models).toBeUndefined();
    expect(env.executions.stored(record.execution_id).cost_units).not.toHaveProperty('models');
  });
});

/**
 * A step attempt that called a model and then failed (a throttled write, a failed image upload) is retried by the
 * state machine from the same cursor, and the retry calls the model again: Bedrock bills both. Each attempt's
 * invocation meters the calls it made, once, whatever way it ended; the execution's record keeps the attempt that got through.
 */
describe('per-model metering of a step attempt that fails', () => {
  const THINK: WorkflowDefinition = {
    ...MIXED,
    id: 'think',
    start: 'think',
    nodes: {
      think: { type: 'llm', provider: 'bedrock', model_id: PRO, prompt: 'Think', next: 'done' },
      done: { type: 'end', output: '{{nodes.think.output}}' },
    },
  };
  const PRO_TOKENS = { input_tokens: 100, output_tokens: 20, cache_read_tokens: 50, cache_write_tokens: 10 };

  async function started(env: ReturnType<typeof setup>['env'], definition: WorkflowDefinition) {
    env.publications.seed(PROJECT, [definition]);
    const record = await startExecution(env.start, { projectId: PROJECT }, definition.id, {
      input: { message: 'hi' },
      user_id: 'u',
      overrides: {},
    });
    return { record, state: env.stateMachine.executions.get(record.execution_id)!.input as StepState };
  }

  /** A step attempt that throws: what its invocation metered, for the task stack's settlement to write. */
  async function failedStep(step: StepDeps, state: StepState) {
    const metering: Metering = { units: emptyCostUnits(), startedAtMs: performance.now(), memoryMb: 256 };
    const error = await runMetered(metering, () => runStep(step, state)).then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    );
    expect(error?.name).toBe('ThrottlingException');
    return metering;
  }

  it('meters the tokens of an llm node whose reply could not be written, and the retry its own, each once', async () => {
    const { env, step, bedrock } = setup();
    const { record, state } = await started(env, THINK);
    env.userState.faults.failNext('appendTurn', awsError('ThrottlingException'));

    const failed = await failedStep(step, state);
    expect({ ...failed.models }).toEqual({ [PRO]: PRO_TOKENS });
    expect(failed.units).toMatchObject({ modelCalls: 1, inputTokens: 100, outputTokens: 20, runsFinished: 0 });
    // What the task stack's settlement writes to the project's usage item.
    const added: { subject: string; spent: CostUnits; models?: ModelUsage }[] = [];
    const meter = {
      add: async (subject: string, spent: CostUnits, _now: number, models?: ModelUsage) => void added.push({ subject, spent, models }),
    };
    await settleUsage(meter, failed, { functionName: 'WorkflowStep', memoryLimitInMB: '256' } as Context);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({ subject: `project#${PROJECT}`, spent: { modelCalls: 1, inputTokens: 100, outputTokens: 20 } });
    expect({ ...added[0]!.models }).toEqual({ [PRO]: PRO_TOKENS });

    // The state machine retries with the same input: the model answers again, and that attempt meters its own call.
    const retried = await meteredStep(step, state);
    expect(retried.next).toMatchObject({ outcome: 'finished' });
    expect(bedrock.sent.map((call) => call.modelId)).toEqual([PRO, PRO]);
    expect({ ...retried.metering.models }).toEqual({ [PRO]: PRO_TOKENS });
    expect(retried.metering.units).toMatchObject({ modelCalls: 1, inputTokens: 100, outputTokens: 20, runsFinished: 1 });
    // The execution's record has the per-run figures of the attempt that finished, as an execution without the failure would.
    const stored = env.executions.stored(record.execution_id);
    expect(stored.status).toBe('completed');
    expect({ ...stored.cost_units!.models }).toEqual({ [PRO]: PRO_TOKENS });
    expect(stored.cost_units).toMatchObject({ modelCalls: 1, inputTokens: 100, outputTokens: 20, runsFinished: 1 });
  });

  it('meters the tokens of an execution that fails after its llm node once, in the invocation and in the record', async () => {
    const { env, step } = setup();
    const { record, state } = await started(env, {
      ...THINK,
      id: 'astray',
      nodes: { think: { ...THINK.nodes.think!, next: 'missing' } as WorkflowDefinition['nodes'][string] },
    });
    const { next, metering } = await meteredStep(step, state);
    expect(next).toMatchObject({ outcome: 'finished' });
    expect({ ...metering.models }).toEqual({ [PRO]: PRO_TOKENS });
    expect(metering.units).toMatchObject({ modelCalls: 1, inputTokens: 100, outputTokens: 20, runsFinished: 1 });
    const stored = env.executions.stored(record.execution_id);
    expect(stored).toMatchObject({
      status: 'failed',
      error: 'Node missing does not exist',
      cost_units: { modelCalls: 1, inputTokens: 100 },
    });
    expect({ ...stored.cost_units!.models }).toEqual({ [PRO]: PRO_TOKENS });
  });

  it('meters an image drawn before its upload failed', async () => {
    const { env, step } = setup();
    const { state } = await started(env, {
      ...MIXED,
      id: 'poster',
      start: 'poster',
      nodes: {
        poster: { type: 'image', provider: 'scripted', prompt: 'A poster', width: 256, height: 256, next: 'done' },
        done: { type: 'end', output: 'ok' },
      },
    });
    const failing = {
      ...step,
      images: { ...step.images, store: async () => ({ put: async () => Promise.reject(awsError('ThrottlingException')) }) },
    };
    const failed = await failedStep(failing, state);
    expect({ ...failed.models }).toEqual({ scripted: { images_standard_1024: 1 } });
    expect(failed.units).toMatchObject({ images: 1, modelCalls: 0 });
  });

  it('meters the calls before a pause once when the pause itself fails', async () => {
    const { env, step } = setup();
    const { state } = await started(env, MIXED);
    env.contexts.faults.failNext('writeOutputs', awsError('ThrottlingException'));
    const failed = await failedStep(step, state);
    expect({ ...failed.models }).toEqual({ scripted: { output_tokens: 3 }, [PRO]: PRO_TOKENS });
    expect(failed.units).toMatchObject({ modelCalls: 2, inputTokens: 100, outputTokens: 23 });
  });
});
