import { bedrock } from '#shared/clients/bedrock.ts';
import { optionalFlag, requireEnv } from '#shared/config.ts';
import { BUCKET_ENV, SECRETS_PREFIX_ENV } from '#shared/resources.ts';
import { userStateFromEnv, executionsFromEnv, streamEventsFromEnv, contextStoreFromEnv } from '#executions/wiring.ts';
import { publicationsFromEnv } from '#workflows/wiring.ts';
import { createBedrockProvider } from './bedrock-provider.ts';
import { requireInferenceProfiles } from './inference-profiles.ts';
import { scriptedProvider } from './llm-provider.ts';
import type { StepDeps } from './step-runner.ts';
import { bedrockAgentModel } from './agents/bedrock-agent.ts';
import { scriptedAgentModel } from './agents/scripted-agent.ts';
import { bedrockImageModel } from './images/bedrock-image.ts';
import type { ImageStore } from './images/image-store.ts';
import { scriptedImageModel } from './images/scripted-image.ts';
import type { ToolKit, Toolbox } from './tools/tool-types.ts';

/**
 * The state machine's functions' dependencies, built from their environment (a missing variable fails at cold start).
 * Bedrock is called only through the deployment's application inference profiles, so their map comes first: without
 * it no model could be reached (inference-profiles.ts).
 */
export function stepFromEnv(): StepDeps {
  requireInferenceProfiles();
  return {
    executions: executionsFromEnv(),
    userState: userStateFromEnv(),
    publications: publicationsFromEnv(),
    contexts: contextStoreFromEnv(),
    events: streamEventsFromEnv(),
    providers: { scripted: scriptedProvider, bedrock: createBedrockProvider(bedrock) },
    agents: { models: { scripted: scriptedAgentModel, bedrock: bedrockAgentModel(bedrock) }, tools: toolKitFromEnv() },
    images: { models: { scripted: scriptedImageModel, bedrock: bedrockImageModel(bedrock) }, store: imageStoreFromEnv() },
    now: Date.now,
  };
}

/**
 * Agents' tools (Test-only ALLOW_LOOPBACK_TOOLS, as ALLOW_LOOPBACK_CALLBACKS: never set by CDK). Most runs call no
 * tool, so the tool kit, its JSON Schema validator (ajv), the MCP client and the SSM client load with the first
 * agent that has tools, not at every cold start. The secrets prefix is required at cold start all the same.
 */
function toolKitFromEnv(): ToolKit {
  const allowLoopback = optionalFlag('ALLOW_LOOPBACK_TOOLS');
  const secretsPrefix = requireEnv(SECRETS_PREFIX_ENV);
  let kit: Promise<ToolKit> | undefined;
  const load = () =>
    (kit ??= Promise.all([import('./tools/toolbox.ts'), import('#shared/clients/ssm.ts'), import('./tools/ssm-secrets.ts')]).then(
      ([{ createToolKit }, { ssm }, { ssmSecretSource }]) => createToolKit({ allowLoopback, secrets: ssmSecretSource(ssm, secretsPrefix) }),
    ));
  return {
    open(request) {
      let toolbox: Promise<Toolbox> | undefined;
      const opened = () => (toolbox ??= load().then((loaded) => loaded.open(request)));
      return {
        describe: async () => (request.toolNames.length > 0 ? (await opened()).describe() : []),
        call: async (name, args) => (await opened()).call(name, args),
        close: async () => (toolbox ? (await toolbox).close() : undefined),
      };
    },
  };
}

/** Images go to the bodies bucket under their execution; the S3 client and the presigner load with the first image. */
function imageStoreFromEnv(): () => Promise<ImageStore> {
  const bucket = requireEnv(BUCKET_ENV.bodies);
  let store: Promise<ImageStore> | undefined;
  return () =>
    (store ??= Promise.all([import('#shared/clients/s3.ts'), import('./images/image-store.ts')]).then(([{ s3 }, { createImageStore }]) =>
      createImageStore(s3, bucket),
    ));
}
