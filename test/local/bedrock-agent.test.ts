import { describe, expect, it } from 'vitest';
import type { StreamEventBuffer } from '#executions/stream-event-log.ts';
import type { StreamEvent } from '#executions/stream-events.ts';
import { emptyUsage } from '#executions/execution-usage.ts';
import { runAgent, type AgentAssignment } from '#engine/agent-runner.ts';
import { bedrockAgentModel } from '#engine/agents/bedrock-agent.ts';
import { scriptedAgentModel } from '#engine/agents/scripted-agent.ts';
import type { ToolKit } from '#engine/tools/tool-types.ts';
import { workflowShape, type WorkflowDefinition } from '#workflows/definition-schema.ts';
import { useBedrockStandIn } from '../support/bedrock.ts';

/**
 * The Bedrock agent provider with the real `@aws-sdk/client-bedrock-runtime` and the real stream parsing, against the
 * local Bedrock Runtime stand-in, which answers ConverseStream in the AWS event-stream encoding, scripted per test.
 */
const MODEL = 'amazon.nova-lite-v1:0';
const standIn = useBedrockStandIn();

const definition: WorkflowDefinition = workflowShape.parse({
  id: 'desk',
  name: 'Desk',
  start: 'front',
  tools: {
    weather: {
      type: 'http',
      url: 'https://api.example.com/w',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
  nodes: {
    front: {
      type: 'agent',
      provider: 'bedrock',
      model_id: MODEL,
      instructions: 'You triage {{input.topic}}.',
      tools: ['weather'],
      handoffs: ['closer'],
      max_tokens: 50,
      next: 'done',
    },
    closer: { type: 'agent', provider: 'bedrock', model_id: MODEL, instructions: 'You close.', next: 'done' },
    done: { type: 'end', output: '{{nodes.front.output}}' },
  },
});

/** The tool kit is the product's seam to the outside; here it answers the weather and records calls. */
function recordingTools() {
  const calls: { name: string; args: unknown }[] = [];
  const kit: ToolKit = {
    open: ({ toolNames }) => ({
      describe: () =>
        Promise.resolve(
          toolNames.includes('weather')
            ? [{ name: 'weather', description: 'Weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } }]
            : [],
        ),
      call: (name, args) => {
        calls.push({ name, args });
        return Promise.resolve({ ok: true as const, result: { sky: 'clear', city: args.city } });
      },
      close: () => Promise.resolve(),
    }),
  };
  return { kit, calls };
}

function agentRun(nodeId = 'front'): AgentAssignment & { events: StreamEventBuffer & { list: StreamEvent[] } } {
  const list: StreamEvent[] = [];
  const events = {
    list,
    push: (event: StreamEvent) => void list.push(event),
    flush: () => Promise.resolve('appended'),
  } as unknown as StreamEventBuffer & { list: StreamEvent[] };
  return {
    definition,
    projectId: 'p',
    nodeId,
    node: definition.nodes[nodeId] as AgentAssignment['node'],
    scope: { input: { message: 'Is it sunny in Oslo?', topic: 'weather' }, memory: {}, nodes: {}, approval: null, history: '' },
    events,
    usage: emptyUsage(),
  };
}

const deps = (kit: ToolKit) => ({ models: { scripted: scriptedAgentModel, bedrock: bedrockAgentModel(standIn.client) }, tools: kit });

describe('the bedrock agent provider through the Bedrock stand-in', () => {
  it('streams text deltas as tokens and counts the model call and its tokens', async () => {
    standIn.bedrock.scriptConverse(MODEL, [{ text: ['Sunny ', 'all ', 'day.'], usage: { inputTokens: 21, outputTokens: 3 } }]);
    const run = agentRun();
    const result = await runAgent(run, deps(recordingTools().kit));
    expect(result).toEqual({ output: 'Sunny all day.', next: 'done', agents: ['front'] });
    expect(run.events.list).toEqual(['Sunny ', 'all ', 'day.'].map((content) => ({ type: 'token', data: { content, node_id: 'front' } })));
    expect(run.usage).toEqual({ model_calls: 1, input_tokens: 21, output_tokens: 3, tool_calls: 0, images: 0 });
    const request = standIn.bedrock.requests[0]!.body as Record<string, any>;
    expect(request.system).toEqual([{ text: 'You triage weather.' }]);
    expect(request.messages).toEqual([{ role: 'user', content: [{ text: 'Is it sunny in Oslo?' }] }]);
    expect(request.inferenceConfig).toEqual({ maxTokens: 50 });
    expect(request.toolConfig.tools.map((tool: any) => tool.toolSpec.name)).toEqual(['weather', 'transfer_to_closer']);
  });

  it('assembles a tool use from its input deltas, runs it, and sends the result back as a toolResult', async () => {
    standIn.bedrock.scriptConverse(MODEL, [
      {
        text: ['Let me look. '],
        toolUses: [{ toolUseId: 'tu-1', name: 'weather', input: { city: 'Oslo' } }],
        usage: { inputTokens: 20, outputTokens: 9 },
      },
      { text: ['Clear in Oslo.'], usage: { inputTokens: 40, outputTokens: 4 } },
    ]);
    const tools = recordingTools();
    const run = agentRun();
    const result = await runAgent(run, deps(tools.kit));
    expect(tools.calls).toEqual([{ name: 'weather', args: { city: 'Oslo' } }]);
    expect(result.output).toBe('Clear in Oslo.');
    expect(run.events.list.filter((event) => event.type === 'tool_call').map((event) => event.data.status)).toEqual([
      'started',
      'succeeded',
    ]);
    const second = standIn.bedrock.requests[1]!.body as Record<string, any>;
    expect(second.messages).toEqual([
      { role: 'user', content: [{ text: 'Is it sunny in Oslo?' }] },
      {
        role: 'assistant',
        content: [{ text: 'Let me look. ' }, { toolUse: { toolUseId: 'tu-1', name: 'weather', input: { city: 'Oslo' } } }],
      },
      {
        role: 'user',
        content: [{ toolResult: { toolUseId: 'tu-1', content: [{ json: { sky: 'clear', city: 'Oslo' } }], status: 'success' } }],
      },
    ]);
    expect(run.usage).toEqual({ model_calls: 2, input_tokens: 60, output_tokens: 13, tool_calls: 1, images: 0 });
  });

  it('hands off through the transfer tool, carrying the conversation as text to the next agent', async () => {
    standIn.bedrock.scriptConverse(MODEL, [
      { toolUses: [{ toolUseId: 'tu-1', name: 'weather', input: { city: 'Oslo' } }] },
      { toolUses: [{ toolUseId: 'tu-2', name: 'transfer_to_closer', input: {} }] },
      { text: ['Goodbye.'] },
    ]);
    const run = agentRun();
    const result = await runAgent(run, deps(recordingTools().kit));
    expect(result).toEqual({ output: 'Goodbye.', next: 'done', agents: ['front', 'closer'] });
    expect(run.events.list.find((event) => event.type === 'agent_handoff')!.data).toEqual({ from: 'front', to: 'closer' });
    const closer = standIn.bedrock.requests[2]!.body as Record<string, any>;
    expect(closer.system).toEqual([{ text: 'You close.' }]);
    // The closer has no tools: the earlier tool use is told as text, which the model accepts without a toolConfig.
    expect(closer.toolConfig).toBeUndefined();
    expect(closer.messages).toEqual([
      { role: 'user', content: [{ text: 'Is it sunny in Oslo?' }] },
      { role: 'assistant', content: [{ text: '[called weather with {"city":"Oslo"}]' }] },
      { role: 'user', content: [{ text: '[weather answered {"sky":"clear","city":"Oslo"}]' }] },
    ]);
  });

  it('ends the agent with what it produced when the model stops at max_tokens', async () => {
    standIn.bedrock.scriptConverse(MODEL, [{ text: ['The forecast for the whole week is ', 'sunny with'], stopReason: 'max_tokens' }]);
    const run = agentRun();
    const result = await runAgent(run, deps(recordingTools().kit));
    expect(result.output).toBe('The forecast for the whole week is sunny with');
    expect(standIn.bedrock.requests).toHaveLength(1);
  });

  it('fails the execution clearly when the model keeps calling tools past max_turns', async () => {
    const looping = workflowShape.parse({
      ...definition,
      nodes: { ...definition.nodes, front: { ...definition.nodes.front, max_turns: 2 } },
    });
    standIn.bedrock.scriptConverse(
      MODEL,
      [1, 2].map((n) => ({ toolUses: [{ toolUseId: `tu-${n}`, name: 'weather', input: { city: 'Oslo' } }] })),
    );
    const run = { ...agentRun(), definition: looping, node: looping.nodes.front as AgentAssignment['node'] };
    await expect(runAgent(run, deps(recordingTools().kit))).rejects.toThrow('Agent front used its 2 turns without a reply');
  });
});
