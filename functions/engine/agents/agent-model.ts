import type { ExecutionUsage } from '#executions/execution-usage.ts';
import type { ModelUsage } from '#shared/metering/cost-meter.ts';
import type { NodeOfType } from '#workflows/definition-schema.ts';
import type { TemplateScope } from '#workflows/template.ts';
import type { ToolAnswer, ToolDescriptor } from '../tools/tool-types.ts';

export type AgentNode = NodeOfType<'agent'>;

/** The transcript of an agent run, provider-neutral (the shapes of Bedrock's Converse content blocks). */
export type ContentBlock =
  | { text: string }
  | { toolUse: { toolUseId: string; name: string; input: Record<string, unknown> } }
  | { toolResult: { toolUseId: string; name: string; answer: ToolAnswer } };

export interface TranscriptMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

interface AgentTurnRequest {
  nodeId: string;
  node: AgentNode;
  /** The execution's scope with `tool_results` (the latest result of each tool). */
  scope: TemplateScope;
  /** This agent's turn, from 0 (a hand-off starts the next agent at 0). */
  turn: number;
  /** Ends with a user message: the prompt, or the results of the last tool calls. */
  transcript: readonly TranscriptMessage[];
  /** The agent's tools as its model sees them (an MCP server is asked only when a model needs the list). */
  describeTools: () => Promise<ToolDescriptor[]>;
  onToken: (content: string) => void;
  usage: ExecutionUsage;
  /** The same tokens by model (the node's `model_id`; `scripted` offline), cache reads and writes included. */
  models?: ModelUsage;
}

export type ToolCallRequest = { id: string; name: string; args: Record<string, unknown> };

/** What one model turn decided; `text` is what it said on the way (already streamed as tokens). */
export type AgentTurn =
  | { kind: 'reply'; text: string }
  | { kind: 'tool_calls'; text: string; calls: ToolCallRequest[] }
  | { kind: 'handoff'; text: string; to: string };

export interface AgentModel {
  turn(request: AgentTurnRequest): Promise<AgentTurn>;
}

/** Word tokens as the scripted providers stream them: spaces travel with the word before them. */
export function wordTokens(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}
