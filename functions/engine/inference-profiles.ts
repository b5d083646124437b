import { endedMessage, lookUpModel } from '#shared/bedrock-catalog.ts';
import { requireEnv } from '#shared/config.ts';
import { isJsonObject } from '#shared/json-object.ts';
import { ExecutionFailure } from './execution-failure.ts';

/**
 * Which identifier a Bedrock call sends for a model a workflow names. On-demand calls carry no cost allocation tag,
 * so the deployment creates one tagged application inference profile per allowed model (lib/cdk/bedrock-models.ts
 * `applicationInferenceProfiles`) and tells the step function which is which in one environment variable, a JSON
 * object from the model id to the profile's ARN. A call sends the profile's ARN; everything else (usage, prices,
 * events, errors) keeps the model id the workflow names. The role may reach a model only through those profiles (a
 * condition on `bedrock:InferenceProfileArn`), so a model id without a profile (one outside the deployment's list) is
 * never sent: the execution fails naming it.
 */
export const INFERENCE_PROFILES_ENV = 'BEDROCK_INFERENCE_PROFILES';

/** Model id → application inference profile ARN. */
export type InferenceProfiles = ReadonlyMap<string, string>;

const APPLICATION_PROFILE_ARN = /^arn:aws(-[a-z]+)*:bedrock:[a-z]{2}(-[a-z]+)+-\d:\d{12}:application-inference-profile\/[a-z0-9]{1,64}$/;

/** The variable's value, checked whole: a catalog model id per key, an application inference profile ARN per value, no ARN twice. */
export function parseInferenceProfiles(text: string): InferenceProfiles {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${INFERENCE_PROFILES_ENV} is not JSON`);
  }
  if (!isJsonObject(value)) throw new Error(`${INFERENCE_PROFILES_ENV} must be a JSON object from model id to inference profile ARN`);
  const profiles = new Map<string, string>();
  for (const [modelId, arn] of Object.entries(value)) {
    // Only the catalog entry is read, so the time given is beside the point.
    if (!lookUpModel(modelId, 0))
      throw new Error(`${INFERENCE_PROFILES_ENV}: ${JSON.stringify(modelId)} is not a model the product supports`);
    if (typeof arn !== 'string' || !APPLICATION_PROFILE_ARN.test(arn)) {
      throw new Error(
        `${INFERENCE_PROFILES_ENV}: the profile of ${modelId} is not an application inference profile ARN: ${JSON.stringify(arn)}`,
      );
    }
    if ([...profiles.values()].includes(arn)) throw new Error(`${INFERENCE_PROFILES_ENV}: ${arn} is given for two models`);
    profiles.set(modelId, arn);
  }
  return profiles;
}

/**
 * Read once, as the module loads: a malformed value fails the function's cold start. The step function's
 * dependencies require it (`requireInferenceProfiles`, from step-wiring.ts), so it is unset only in a process that
 * never builds them: a provider under test against the Bedrock stand-in directly, whose ids go as named.
 */
const FROM_ENVIRONMENT: InferenceProfiles | undefined = ((text) => (text === undefined ? undefined : parseInferenceProfiles(text)))(
  process.env[INFERENCE_PROFILES_ENV],
);

/** The step function's map, which it cannot run without: a missing variable fails its cold start. */
export function requireInferenceProfiles(): InferenceProfiles {
  return FROM_ENVIRONMENT ?? parseInferenceProfiles(requireEnv(INFERENCE_PROFILES_ENV));
}

/**
 * What a Bedrock command's `modelId` carries for the model a node names: its profile's ARN. A model the map lacks
 * fails the execution, naming it, before any call: a direct call would bypass the profile's tags, and the role refuses it.
 * A model past its end of life at `now` (a definition published before it) has no profile anywhere (no deployment may
 * list it), so the failure says it ended instead of asking for it in the list.
 */
export function invocationModelId<Id extends string | undefined>(
  modelId: Id,
  profiles: InferenceProfiles | undefined = FROM_ENVIRONMENT,
  now: number = Date.now(),
): Id | string {
  if (modelId === undefined || profiles === undefined) return modelId;
  const arn = profiles.get(modelId);
  if (arn === undefined) {
    const found = lookUpModel(modelId, now);
    if (found?.state === 'ended') throw new ExecutionFailure(`Bedrock model ${endedMessage(modelId, found.model)}`);
    throw new ExecutionFailure(
      `Bedrock model ${modelId} is not one this deployment allows: it has no application inference profile (add it to the ` +
        `deployment's bedrockModels)`,
    );
  }
  return arn;
}
