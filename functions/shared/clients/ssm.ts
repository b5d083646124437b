import { SSMClient } from '@aws-sdk/client-ssm';
import { traced } from '../lambda/powertools.ts';

/** The SSM client (secrets of agents' tools), created once per process, on the first tool that uses a secret. */
function tracedSsmClient(): SSMClient {
  return traced(new SSMClient({}));
}

export const ssm = /* @__PURE__ */ tracedSsmClient();
