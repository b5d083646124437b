import { SFNClient } from '@aws-sdk/client-sfn';
import { traced } from '../lambda/powertools.ts';
import { hotPathClientConfig, withoutSdkLogging } from './hot-path.ts';
import { meteredPerRequest } from './cost-metering.ts';

/** The Step Functions client, created once per process (locally `AWS_ENDPOINT_URL_SFN` names the stand-in). */
function meteredSfnClient(): SFNClient {
  return meteredPerRequest(traced(withoutSdkLogging(new SFNClient(hotPathClientConfig()))), () => ({ stepFunctionsRequests: 1 }));
}

export const sfn = /* @__PURE__ */ meteredSfnClient();
