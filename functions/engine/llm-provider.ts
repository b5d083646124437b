import type { ExecutionUsage } from '#executions/execution-usage.ts';
import { countModel, SCRIPTED_MODEL, type ModelUsage } from '#shared/metering/cost-meter.ts';
import type { NodeOfType } from '#workflows/definition-schema.ts';
import { renderText, type TemplateScope } from '#workflows/template.ts';
import { wordTokens } from './agents/agent-model.ts';

/** One llm turn: the node's params, the execution's scope, and where streamed tokens go. */
interface LlmRequest {
  node: NodeOfType<'llm'>;
  scope: TemplateScope;
  onToken: (content: string) => Promise<void> | void;
  /** Counts the call and its tokens (scripted: word tokens out, none in). */
  usage: ExecutionUsage;
  /** Counts the tokens again by model (the node's `model_id`; `scripted` offline): what the cost report prices. */
  models?: ModelUsage;
}

export interface LlmProvider {
  generate(request: LlmRequest): Promise<string>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The embedded default: renders `reply` and emits it word by word (spaces travel with the word before them),
 * so every workflow runs offline and deterministically.
 */
export const scriptedProvider: LlmProvider = {
  async generate({ node, scope, onToken, usage, models }) {
    const reply = renderText(node.reply ?? '', scope);
    const tokens = wordTokens(reply);
    usage.model_calls += 1;
    usage.output_tokens += tokens.length;
    if (models) countModel(models, SCRIPTED_MODEL, { output_tokens: tokens.length });
    for (const [i, token] of tokens.entries()) {
      if (i > 0 && node.token_delay_ms) await sleep(node.token_delay_ms);
      await onToken(token);
    }
    return reply;
  },
};
