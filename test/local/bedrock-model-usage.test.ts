import { describe, expect, it } from 'vitest';
import { emptyModelUsage } from '#shared/metering/cost-meter.ts';
import { emptyUsage } from '#executions/execution-usage.ts';
import { bedrockAgentModel } from '#engine/agents/bedrock-agent.ts';
import type { AgentNode } from '#engine/agents/agent-model.ts';
import { createBedrockProvider } from '#engine/bedrock-provider.ts';
import type { NodeOfType } from '#workflows/definition-schema.ts';
import { useBedrockStandIn } from '../support/bedrock.ts';

/**
 * Bedrock's `metadata.usage` as the real SDK parses it from the event stream, cache tokens included, counted per model
 * by the llm and agent providers: the tokens the cost report prices.
 */
const HAIKU_US = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
const LITE = 'amazon.nova-lite-v1:0';
const standIn = useBedrockStandIn();

const scope = { input: { message: 'hello' }, memory: {}, nodes: {}, approval: null, history: '' };

describe('per-model token counts from Bedrock', () => {
  it("counts an llm node's input, output and cache tokens under the model id it names", async () => {
    standIn.bedrock.scriptConverse(HAIKU_US, [
      { text: ['Hi ', 'there.'], usage: { inputTokens: 12, outputTokens: 3, cacheReadInputTokens: 4096, cacheWriteInputTokens: 512 } },
    ]);
    const usage = emptyUsage();
    const models = emptyModelUsage();
    const node = { type: 'llm', provider: 'bedrock', model_id: HAIKU_US, next: 'done' } as NodeOfType<'llm'>;
    expect(await createBedrockProvider(standIn.client).generate({ node, scope, onToken: () => undefined, usage, models })).toBe(
      'Hi there.',
    );
    expect(usage).toMatchObject({ model_calls: 1, input_tokens: 12, output_tokens: 3 });
    expect({ ...models }).toEqual({ [HAIKU_US]: { input_tokens: 12, output_tokens: 3, cache_read_tokens: 4096, cache_write_tokens: 512 } });
  });

  it('adds each agent turn to its model, and leaves cache counters out when the model reports none', async () => {
    standIn.bedrock.scriptConverse(LITE, [
      { text: ['One.'], usage: { inputTokens: 30, outputTokens: 2, cacheReadInputTokens: 100 } },
      { text: ['Two.'], usage: { inputTokens: 40, outputTokens: 2 } },
    ]);
    const usage = emptyUsage();
    const models = emptyModelUsage();
    const node = {
      type: 'agent',
      provider: 'bedrock',
      model_id: LITE,
      tools: [],
      handoffs: [],
      max_turns: 8,
      script: [],
      next: 'done',
    } as unknown as AgentNode;
    const turn = (n: number) =>
      bedrockAgentModel(standIn.client).turn({
        nodeId: 'a',
        node,
        scope,
        turn: n,
        transcript: [{ role: 'user', content: [{ text: 'hello' }] }],
        describeTools: async () => [],
        onToken: () => undefined,
        usage,
        models,
      });
    await turn(0);
    await turn(1);
    expect(usage).toMatchObject({ model_calls: 2, input_tokens: 70, output_tokens: 4 });
    expect({ ...models }).toEqual({ [LITE]: { input_tokens: 70, output_tokens: 4, cache_read_tokens: 100 } });
  });
});
