import { randomUUID } from 'node:crypto';
import { MAX_TOOL_EVENT_RESULT_BYTES } from '#shared/limits.ts';
import type { HttpTool, NodeOfType, WorkflowDefinition } from '#workflows/definition-schema.ts';
import { renderText, renderValue, type TemplateScope } from '#workflows/template.ts';
import type { RunEventBuffer } from '#executions/run-event-log.ts';
import { RunFailure } from './run-failure.ts';

/** Runs one tool call; a failure is an answer for the model (`ok: false`), never an exception. */
export interface ToolCaller {
  call(tool: HttpTool, args: Record<string, unknown>): Promise<{ ok: true; result: unknown } | { ok: false; error: string }>;
}

type AgentNode = NodeOfType<'agent'>;

export interface AgentRun {
  definition: WorkflowDefinition;
  nodeId: string;
  node: AgentNode;
  scope: TemplateScope;
  events: RunEventBuffer;
}

/**
 * An agent node's loop of model turns (the `scripted` provider: one script step per turn). Text ends the loop as
 * the agent's output; tool calls run and their results become `{{tool_results.<tool>}}` for the next turns; a
 * hand-off moves control to another agent node, whose `next` the run then follows. Each agent has its own
 * `max_turns`; running out of turns or script without a reply fails the run.
 */
export async function runAgent(run: AgentRun, tools: ToolCaller): Promise<{ output: string; next: string; agents: string[] }> {
  const toolResults = Object.create(null) as Record<string, unknown>;
  const scope = { ...run.scope, tool_results: toolResults } as TemplateScope;
  const agents = [run.nodeId];
  let current = run.nodeId;
  let agent = run.node;
  let turn = 0;
  for (;;) {
    if (turn >= agent.max_turns) throw new RunFailure(`Agent ${current} used its ${agent.max_turns} turns without a reply`);
    const step = agent.script[turn];
    turn += 1;
    if (!step) throw new RunFailure(`Agent ${current} ended its script without a reply`);
    if ('reply' in step) {
      const output = renderText(step.reply, scope);
      for (const content of output.match(/\S+\s*|\s+/g) ?? []) run.events.push({ type: 'token', data: { content, node_id: current } });
      return { output, next: agent.next, agents };
    }
    if ('handoff' in step) {
      run.events.push({ type: 'agent_handoff', data: { from: current, to: step.handoff } });
      current = step.handoff;
      agent = run.definition.nodes[current] as AgentNode;
      agents.push(current);
      turn = 0;
      continue;
    }
    for (const call of step.tool_calls) {
      const args = renderValue(call.arguments, scope) as Record<string, unknown>;
      toolResults[call.tool] = await callTool(run, current, call.tool, args, tools);
    }
  }
}

async function callTool(run: AgentRun, nodeId: string, name: string, args: Record<string, unknown>, tools: ToolCaller): Promise<unknown> {
  const callId = randomUUID();
  run.events.push({ type: 'tool_call', data: { node_id: nodeId, call_id: callId, tool: name, arguments: args, status: 'started' } });
  const startedAt = performance.now();
  // Definitions published before agents existed have no `tools`; validation made sure the name is defined.
  const tool = (run.definition.tools ?? {})[name]!;
  const answer = await tools.call(tool, args);
  const ended = { node_id: nodeId, call_id: callId, tool: name, duration_ms: Math.round(performance.now() - startedAt) };
  if (answer.ok) {
    run.events.push({ type: 'tool_call', data: { ...ended, status: 'succeeded', ...eventResult(answer.result) } });
    return answer.result;
  }
  run.events.push({ type: 'tool_call', data: { ...ended, status: 'failed', error: answer.error } });
  return { error: answer.error };
}

/** A result in an event is cut to 2 KB of JSON text (the model got up to 64 KB). */
function eventResult(result: unknown): { result: unknown; result_truncated?: true } {
  const json = JSON.stringify(result ?? null);
  if (Buffer.byteLength(json, 'utf8') <= MAX_TOOL_EVENT_RESULT_BYTES) return { result };
  return { result: Buffer.from(json, 'utf8').subarray(0, MAX_TOOL_EVENT_RESULT_BYTES).toString('utf8').replace(/\uFFFD$/, ''), result_truncated: true };
}
