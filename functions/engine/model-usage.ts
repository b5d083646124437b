import type { TokenUsage } from '@aws-sdk/client-bedrock-runtime';
import type { ExecutionUsage } from '#executions/execution-usage.ts';
import { countModel, type ModelUsage } from '#shared/metering/cost-meter.ts';

/**
 * Counts one Bedrock answer's `metadata.usage`: the execution's public totals (input and output tokens) and, by the node's
 * LOGICAL model id (`model_id` as the workflow names it, never the ARN a call is routed through: it is the price
 * key), the tokens the cost report prices, cache reads and writes included. Bedrock's `inputTokens` leaves out the
 * tokens read from or written to the prompt cache, which are billed at their own prices.
 */
export function countBedrockTokens(
  usage: ExecutionUsage,
  models: ModelUsage | undefined,
  modelId: string | undefined,
  tokens: Partial<TokenUsage> | undefined,
): void {
  if (!tokens) return;
  const input = tokens.inputTokens ?? 0;
  const output = tokens.outputTokens ?? 0;
  usage.input_tokens += input;
  usage.output_tokens += output;
  if (models) {
    countModel(models, modelId ?? UNNAMED_MODEL, {
      input_tokens: input,
      output_tokens: output,
      cache_read_tokens: tokens.cacheReadInputTokens ?? 0,
      cache_write_tokens: tokens.cacheWriteInputTokens ?? 0,
    });
  }
}

/** A Bedrock node always names its model (publish checks it); were one not to, its tokens are counted unpriced. */
const UNNAMED_MODEL = '(no model_id)';
