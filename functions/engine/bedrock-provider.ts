import { BedrockRuntimeClient, ConverseStreamCommand, type Message } from '@aws-sdk/client-bedrock-runtime';
import { renderText } from '#workflows/template.ts';
import type { LlmProvider } from './llm-provider.ts';

const DEFAULT_PROMPT = '{{input.message}}';

/**
 * Amazon Bedrock through ConverseStream: the node names the model and its prompts; `{{history}}` in the
 * system prompt or prompt gives the model the thread's earlier turns.
 */
export function createBedrockProvider(client: BedrockRuntimeClient): LlmProvider {
  return {
    async generate({ node, scope, onToken, usage }) {
      const messages: Message[] = [{ role: 'user', content: [{ text: renderText(node.prompt ?? DEFAULT_PROMPT, scope) }] }];
      const response = await client.send(
        new ConverseStreamCommand({
          modelId: node.model_id,
          system: node.system ? [{ text: renderText(node.system, scope) }] : undefined,
          messages,
          inferenceConfig: { maxTokens: node.max_tokens, temperature: node.temperature },
        }),
      );
      usage.model_calls += 1;
      let reply = '';
      for await (const event of response.stream ?? []) {
        usage.input_tokens += event.metadata?.usage?.inputTokens ?? 0;
        usage.output_tokens += event.metadata?.usage?.outputTokens ?? 0;
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
