import { randomUUID } from 'node:crypto';
import { renderText, renderValue } from '#workflows/template.ts';
import { countModel, SCRIPTED_MODEL } from '#shared/metering/cost-meter.ts';
import { ExecutionFailure } from '../execution-failure.ts';
import { wordTokens, type AgentModel } from './agent-model.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The embedded default: plays the node's `script`, one step per model turn, so every path of an agent runs offline
 * and deterministically. A turn counts as a model call; a reply's word tokens count as its output tokens.
 */
export const scriptedAgentModel: AgentModel = {
  async turn({ nodeId, node, scope, turn, onToken, usage, models }) {
    const step = node.script[turn];
    if (!step) throw new ExecutionFailure(`Agent ${nodeId} ended its script without a reply`);
    usage.model_calls += 1;
    if ('reply' in step) {
      const text = renderText(step.reply, scope);
      const tokens = wordTokens(text);
      for (const [i, token] of tokens.entries()) {
        if (i > 0 && node.token_delay_ms) await sleep(node.token_delay_ms);
        onToken(token);
      }
      usage.output_tokens += tokens.length;
      if (models) countModel(models, SCRIPTED_MODEL, { output_tokens: tokens.length });
      return { kind: 'reply', text };
    }
    if ('handoff' in step) return { kind: 'handoff', text: '', to: step.handoff };
    return {
      kind: 'tool_calls',
      text: '',
      calls: step.tool_calls.map((call) => ({
        id: randomUUID(),
        name: call.tool,
        args: renderValue(call.arguments, scope) as Record<string, unknown>,
      })),
    };
  },
};
