import { BedrockRuntimeClient, type BedrockRuntimeClientConfig } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { traced } from '../lambda/powertools.ts';

/**
 * The Bedrock runtime client, created once per process; only the step function (llm, agent and image nodes) uses
 * it. Over HTTP/1.1: the SDK's default HTTP/2 handler exists for the bidirectional-stream operation, which the
 * product does not use; ConverseStream and InvokeModel answer on one response, which HTTP/1.1 carries, and the
 * twin's Bedrock stand-in and its IAM front door then sit in the same path as on AWS.
 */
export function createBedrockClient(config: BedrockRuntimeClientConfig = {}): BedrockRuntimeClient {
  return new BedrockRuntimeClient({ requestHandler: new NodeHttpHandler({ connectionTimeout: 5_000 }), ...config });
}

export const bedrock = /* @__PURE__ */ traced(createBedrockClient());
