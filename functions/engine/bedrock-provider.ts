import { BedrockRuntimeClient, ConverseStreamCommand, type Message } from '@aws-sdk/client-bedrock-runtime';
import { renderText } from '#workflows/template.ts';
import type { LlmProvider } from './llm-provider.ts';
import { invocationModelId } from './inference-profiles.ts';
import { countBedrockTokens } from './model-usage.ts';

const DEFAULT_PROMPT = '{{input.message}}';

/**
 * Amazon Bedrock through ConverseStream: the node names the model and its prompts; `{{history}}` in the
 * system prompt or prompt gives the model the thread's earlier turns.
 */
export function createBedrockProvider(client: BedrockRuntimeClient): LlmProvider {
  return {
    async generate({ node, scope, onToken, usage, models }) {
      const messages: Message[] = [{ role: 'user', content: [{ text: renderText(node.prompt ?? DEFAULT_PROMPT, scope) }] }];
      const response = await client.send(
        new ConverseStreamCommand({
          modelId: invocationModelId(node.model_id),
          system: node.system ? [{ text: renderText(node.system, scope) }] : undefined,
          messages,
          inferenceConfig: { maxTokens: node.max_tokens, temperature: node.temperature },
        }),
      );
      usage.model_calls += 1;
      let reply = '';
      for await (const event of response.stream ?? []) {
        countBedrockTokens(usage, models, node.model_id, event.metadata?.usage);
        const text = event.contentBlockDelta?.delta?.text;
        if (text) {
          reply += text;
          await onToken(text);
        }
      }
      return reply;
    },
  };
}
