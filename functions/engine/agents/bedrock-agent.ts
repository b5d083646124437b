import type {
  BedrockRuntimeClient,
  ContentBlock as BedrockBlock,
  ConverseStreamOutput,
  Message,
  Tool,
  ToolResultContentBlock,
} from '@aws-sdk/client-bedrock-runtime';
import { ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { isJsonObject } from '#shared/json-object.ts';
import { renderText } from '#workflows/template.ts';
import { ExecutionFailure } from '../execution-failure.ts';
import { invocationModelId } from '../inference-profiles.ts';
import type { ToolAnswer, ToolDescriptor } from '../tools/tool-types.ts';
import { HANDOFF_TOOL_PREFIX } from '#workflows/tool-references.ts';
import type { AgentModel, AgentNode, AgentTurn, ContentBlock, TranscriptMessage, ToolCallRequest } from './agent-model.ts';
import { countBedrockTokens } from '../model-usage.ts';

/**
 * Agents on Amazon Bedrock through ConverseStream: the agent's instructions are the system prompt, its tools and
 * a `transfer_to_<node>` tool per hand-off are the `toolConfig`. Text deltas stream as tokens; tool-use input
 * deltas are assembled per content block and parsed when the block stops. `max_tokens` ends the agent with the
 * text produced so far (a tool use cut off by it is dropped: its input is incomplete JSON).
 */
export function bedrockAgentModel(client: BedrockRuntimeClient): AgentModel {
  return {
    async turn({ nodeId, node, scope, transcript, describeTools, onToken, usage, models }) {
      const tools = [...(await describeTools()).map(toolSpec), ...node.handoffs.map(handoffSpec)];
      const response = await client.send(
        new ConverseStreamCommand({
          modelId: invocationModelId(node.model_id),
          system: node.instructions ? [{ text: renderText(node.instructions, scope) }] : undefined,
          messages: transcript.map(asBedrockMessage),
          toolConfig: tools.length > 0 ? { tools } : undefined,
          inferenceConfig: { maxTokens: node.max_tokens, temperature: node.temperature },
        }),
      );
      usage.model_calls += 1;
      const turn = new TurnAssembly(onToken);
      for await (const event of response.stream ?? []) turn.take(event);
      countBedrockTokens(usage, models, node.model_id, turn.tokens);
      return turn.decision(nodeId, node);
    },
  };
}

function toolSpec(tool: ToolDescriptor): Tool {
  return { toolSpec: { name: tool.name, description: tool.description || tool.name, inputSchema: { json: tool.inputSchema as never } } };
}

function handoffSpec(target: string): Tool {
  return {
    toolSpec: {
      name: `${HANDOFF_TOOL_PREFIX}${target}`,
      description: `Hand the conversation over to the ${target} agent, which answers from here on.`,
      inputSchema: { json: { type: 'object', properties: {} } as never },
    },
  };
}

function asBedrockMessage(message: TranscriptMessage): Message {
  return { role: message.role, content: message.content.map(asBedrockBlock) };
}

function asBedrockBlock(block: ContentBlock): BedrockBlock {
  if ('text' in block) return { text: block.text };
  if ('toolUse' in block)
    return { toolUse: { toolUseId: block.toolUse.toolUseId, name: block.toolUse.name, input: block.toolUse.input as never } };
  const { toolUseId, answer } = block.toolResult;
  return { toolResult: { toolUseId, content: [resultContent(answer)], status: answer.ok ? 'success' : 'error' } };
}

/** Models take a JSON object as a `json` block; any other result goes as text. */
function resultContent(answer: ToolAnswer): ToolResultContentBlock {
  if (!answer.ok) return { text: answer.error };
  if (isJsonObject(answer.result)) return { json: answer.result as never };
  return { text: typeof answer.result === 'string' ? answer.result : JSON.stringify(answer.result ?? null) };
}

/** One streamed assistant message, put back together from its events. */
class TurnAssembly {
  text = '';
  /** The turn's `metadata.usage`, summed (one metadata event per answer). */
  readonly tokens = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 };
  private stopReason: string | undefined;
  private readonly toolUses = new Map<number, { toolUseId: string; name: string; input: string; complete: boolean }>();

  constructor(private readonly onToken: (content: string) => void) {}

  take(event: ConverseStreamOutput): void {
    const start = event.contentBlockStart;
    if (start?.start?.toolUse) {
      const { toolUseId = '', name = '' } = start.start.toolUse;
      this.toolUses.set(start.contentBlockIndex ?? 0, { toolUseId, name, input: '', complete: false });
    }
    const delta = event.contentBlockDelta;
    if (delta?.delta?.text) {
      this.text += delta.delta.text;
      this.onToken(delta.delta.text);
    }
    if (delta?.delta?.toolUse) {
      const toolUse = this.toolUses.get(delta.contentBlockIndex ?? 0);
      if (toolUse) toolUse.input += delta.delta.toolUse.input ?? '';
    }
    if (event.contentBlockStop) {
      const toolUse = this.toolUses.get(event.contentBlockStop.contentBlockIndex ?? 0);
      if (toolUse) toolUse.complete = true;
    }
    if (event.messageStop) this.stopReason = event.messageStop.stopReason;
    if (event.metadata?.usage) {
      const usage = event.metadata.usage;
      this.tokens.inputTokens += usage.inputTokens ?? 0;
      this.tokens.outputTokens += usage.outputTokens ?? 0;
      this.tokens.cacheReadInputTokens += usage.cacheReadInputTokens ?? 0;
      this.tokens.cacheWriteInputTokens += usage.cacheWriteInputTokens ?? 0;
    }
  }

  decision(nodeId: string, node: AgentNode): AgentTurn {
    switch (this.stopReason) {
      case 'tool_use':
        return this.toolDecision(nodeId, node);
      case 'end_turn':
      case 'stop_sequence':
      case 'max_tokens':
        return { kind: 'reply', text: this.text };
      case undefined:
        throw new ExecutionFailure(`Agent ${nodeId}: the model's answer ended without a stop reason`);
      default:
        throw new ExecutionFailure(`Agent ${nodeId}: the model stopped with ${this.stopReason}`);
    }
  }

  private toolDecision(nodeId: string, node: AgentNode): AgentTurn {
    const calls: ToolCallRequest[] = [];
    for (const toolUse of this.toolUses.values()) {
      if (!toolUse.complete) continue;
      if (toolUse.name.startsWith(HANDOFF_TOOL_PREFIX)) {
        const to = toolUse.name.slice(HANDOFF_TOOL_PREFIX.length);
        // A hand-off wins over other tool uses of the same turn: the next agent answers from here on.
        if (node.handoffs.includes(to)) return { kind: 'handoff', text: this.text, to };
      }
      calls.push({ id: toolUse.toolUseId, name: toolUse.name, args: parsedInput(toolUse.input) });
    }
    if (calls.length === 0) throw new ExecutionFailure(`Agent ${nodeId}: the model asked for tools but named none`);
    return { kind: 'tool_calls', text: this.text, calls };
  }
}

/** The input is JSON text streamed in pieces; a model that sent no input means `{}`; anything unparseable fails the call's schema check. */
function parsedInput(input: string): Record<string, unknown> {
  if (input.trim() === '') return {};
  try {
    const parsed = JSON.parse(input) as unknown;
    return isJsonObject(parsed) ? parsed : { input: parsed };
  } catch {
    return { input };
  }
}
