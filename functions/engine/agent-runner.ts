import { MAX_TOOL_EVENT_RESULT_BYTES } from '#shared/limits.ts';
import type { ExecutionUsage } from '#executions/execution-usage.ts';
import type { ModelUsage } from '#shared/metering/cost-meter.ts';
import type { WorkflowDefinition } from '#workflows/definition-schema.ts';
import { renderText, type TemplateScope } from '#workflows/template.ts';
import type { StreamEventBuffer } from '#executions/stream-event-log.ts';
import type { AgentModel, AgentNode, TranscriptMessage, ToolCallRequest } from './agents/agent-model.ts';
import { carriedTranscript } from './agents/transcript.ts';
import type { ToolDescriptor, ToolKit, Toolbox } from './tools/tool-types.ts';
import { ExecutionFailure } from './execution-failure.ts';

const DEFAULT_PROMPT = '{{input.message}}';

export interface AgentAssignment {
  definition: WorkflowDefinition;
  projectId: string;
  nodeId: string;
  node: AgentNode;
  scope: TemplateScope;
  events: StreamEventBuffer;
  usage: ExecutionUsage;
  /** The execution's tokens by model, which the cost report prices. */
  models?: ModelUsage;
}

export interface AgentDeps {
  models: Record<AgentNode['provider'], AgentModel>;
  tools: ToolKit;
}

/**
 * An agent node's loop of model turns. Text ends the loop as the agent's output; tool calls run (each with a
 * `tool_call` event as it starts and as it ends) and their results go back to the model, and to the scope as
 * `{{tool_results.<tool>}}`; a hand-off moves control, and the transcript so far, to another agent node, whose
 * `next` the execution then follows. Each agent has its own `max_turns`; running out of them fails the execution.
 */
export async function runAgent(assignment: AgentAssignment, deps: AgentDeps): Promise<{ output: string; next: string; agents: string[] }> {
  const toolResults = Object.create(null) as Record<string, unknown>;
  const scope = { ...assignment.scope, tool_results: toolResults } as TemplateScope;
  const agents = [assignment.nodeId];
  let current = assignment.nodeId;
  let agent = assignment.node;
  let transcript: TranscriptMessage[] = [{ role: 'user', content: [{ text: renderText(agent.prompt ?? DEFAULT_PROMPT, scope) }] }];
  for (;;) {
    const toolbox = deps.tools.open({ definition: assignment.definition, toolNames: agent.tools, projectId: assignment.projectId });
    try {
      const ended = await agentTurns(assignment, deps.models[agent.provider], toolbox, {
        nodeId: current,
        node: agent,
        scope,
        transcript,
        toolResults,
      });
      if (ended.kind === 'reply') return { output: ended.text, next: agent.next, agents };
      assignment.events.push({ type: 'agent_handoff', data: { from: current, to: ended.to } });
      current = ended.to;
      agent = assignment.definition.nodes[current] as AgentNode;
      agents.push(current);
      transcript = carriedTranscript(transcript);
    } finally {
      await toolbox.close();
    }
  }
}

interface AgentState {
  nodeId: string;
  node: AgentNode;
  scope: TemplateScope;
  transcript: TranscriptMessage[];
  toolResults: Record<string, unknown>;
}

async function agentTurns(
  assignment: AgentAssignment,
  model: AgentModel,
  toolbox: Toolbox,
  state: AgentState,
): Promise<{ kind: 'reply'; text: string } | { kind: 'handoff'; to: string }> {
  const { nodeId, node } = state;
  let described: Promise<ToolDescriptor[]> | undefined;
  for (let turn = 0; ; turn += 1) {
    if (turn >= node.max_turns) throw new ExecutionFailure(`Agent ${nodeId} used its ${node.max_turns} turns without a reply`);
    const decided = await model.turn({
      nodeId,
      node,
      scope: state.scope,
      turn,
      transcript: state.transcript,
      describeTools: () => (described ??= toolbox.describe()),
      onToken: (content) => assignment.events.push({ type: 'token', data: { content, node_id: nodeId } }),
      usage: assignment.usage,
      models: assignment.models,
    });
    if (decided.kind === 'reply') return decided;
    if (decided.kind === 'handoff') {
      if (!node.handoffs.includes(decided.to))
        throw new ExecutionFailure(`Agent ${nodeId} handed off to ${decided.to}, which is not one of its handoffs`);
      return decided;
    }
    state.transcript.push({
      role: 'assistant',
      content: [
        ...(decided.text ? [{ text: decided.text }] : []),
        ...decided.calls.map((call) => ({ toolUse: { toolUseId: call.id, name: call.name, input: call.args } })),
      ],
    });
    const results = [];
    for (const call of decided.calls)
      results.push({
        toolResult: { toolUseId: call.id, name: call.name, answer: await callTool(assignment, nodeId, call, toolbox, state.toolResults) },
      });
    state.transcript.push({ role: 'user', content: results });
  }
}

async function callTool(
  assignment: AgentAssignment,
  nodeId: string,
  call: ToolCallRequest,
  toolbox: Toolbox,
  toolResults: Record<string, unknown>,
) {
  assignment.events.push({
    type: 'tool_call',
    data: { node_id: nodeId, call_id: call.id, tool: call.name, arguments: call.args, status: 'started' },
  });
  assignment.usage.tool_calls += 1;
  const startedAt = performance.now();
  const answer = await toolbox.call(call.name, call.args);
  const ended = { node_id: nodeId, call_id: call.id, tool: call.name, duration_ms: Math.round(performance.now() - startedAt) };
  if (answer.ok) {
    assignment.events.push({ type: 'tool_call', data: { ...ended, status: 'succeeded', ...eventResult(answer.result) } });
    toolResults[call.name] = answer.result;
  } else {
    assignment.events.push({ type: 'tool_call', data: { ...ended, status: 'failed', error: answer.error } });
    toolResults[call.name] = { error: answer.error };
  }
  return answer;
}

/** A result in an event is cut to 2 KB of JSON text (the model got up to 64 KB). */
function eventResult(result: unknown): { result: unknown; result_truncated?: true } {
  const json = JSON.stringify(result ?? null);
  if (Buffer.byteLength(json, 'utf8') <= MAX_TOOL_EVENT_RESULT_BYTES) return { result };
  return {
    result: Buffer.from(json, 'utf8')
      .subarray(0, MAX_TOOL_EVENT_RESULT_BYTES)
      .toString('utf8')
      .replace(/\uFFFD$/, ''),
    result_truncated: true,
  };
}
