import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createBedrockClient } from '#shared/clients/bedrock.ts';
import { startBedrockStandIn, type BedrockStandIn } from '#lib/twin/bedrock-stand-in.ts';

/**
 * The local Bedrock Runtime stand-in for one test file, with the real SDK client pointed at it: started before the
 * file's tests, reset (scripts and recorded calls) before each, closed after them.
 */
export function useBedrockStandIn(): { readonly bedrock: BedrockStandIn; readonly client: BedrockRuntimeClient } {
  let bedrock: BedrockStandIn | undefined;
  let client: BedrockRuntimeClient | undefined;
  beforeAll(async () => {
    bedrock = await startBedrockStandIn();
    client = createBedrockClient({
      endpoint: bedrock.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
  });
  afterAll(async () => {
    client?.destroy();
    await bedrock?.close();
  });
  beforeEach(() => bedrock!.reset());
  return {
    get bedrock() {
      return bedrock!;
    },
    get client() {
      return client!;
    },
  };
}
