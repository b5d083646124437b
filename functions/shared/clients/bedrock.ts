import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { traced } from '#shared/powertools.ts';

/** The Bedrock runtime client, created once per process; only the step function (llm nodes) uses it. */
function tracedBedrockClient(): BedrockRuntimeClient {
  return traced(new BedrockRuntimeClient({}));
}

export const bedrock = /* @__PURE__ */ tracedBedrockClient();
