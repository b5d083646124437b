import { randomBytes } from 'node:crypto';
import { applicationInferenceProfiles, type ApplicationProfileSpec } from '#lib/cdk/bedrock-models.ts';
import { schemaRefusals } from './cloudformation-schemas.ts';
import { LOCAL_ACCOUNT } from './local-arns.ts';
import { LOCAL_REGION } from './local-names.ts';

/** An application inference profile the twin created: its name, and the model id it routes to (what it copies). */
export interface LocalApplicationProfile {
  readonly arn: string;
  readonly name: string;
  /** The logical model id: the foundation model's, or the cross-region profile's (`us.<id>`) it copies. */
  readonly model: string;
  readonly copyFrom: string;
}

/**
 * The application inference profiles of the running twins in this process, by ARN: what CloudFormation creates on
 * AWS. The Bedrock stand-in answers a profile ARN only if it is here, and the IAM front door asks here what a call
 * through one needs (the profile, and what it copies). ARNs end in random ids, as Bedrock's do, so twins started in
 * one process (tests) never share a profile.
 */
const created = new Map<string, LocalApplicationProfile>();

/** The profile an ARN names, if a twin of this process created it. */
export function localApplicationProfile(arn: string): LocalApplicationProfile | undefined {
  return created.get(arn);
}

/**
 * `arn:aws:bedrock:<region>::foundation-model/<id>` or `…:<account>:inference-profile/<id>` of the twin's own region
 * and account → the id.
 */
export function modelIdOfLocalArn(arn: string): string | undefined {
  const match = /^arn:aws:bedrock:([^:]*):([^:]*):(foundation-model|inference-profile)\/(.+)$/.exec(arn);
  if (!match || match[1] !== LOCAL_REGION) return undefined;
  const [, , account, type, id] = match;
  return (type === 'foundation-model' ? account === '' : account === LOCAL_ACCOUNT) ? id : undefined;
}

/**
 * Creates the deployment's profiles for `models` (the allow-list), through the function CDK creates them with
 * (`applicationInferenceProfiles`), and answers what the step function's `BEDROCK_INFERENCE_PROFILES` holds:
 * model id → profile ARN. `remove()` deletes them, as a stack deletion does. A profile Bedrock would refuse stops the
 * start (`createLocalProfile`).
 */
export function createLocalInferenceProfiles(models: readonly string[]): { profiles: ReadonlyMap<string, string>; remove(): void } {
  const specs = applicationInferenceProfiles(models, {
    partition: 'aws',
    region: LOCAL_REGION,
    account: LOCAL_ACCOUNT,
    deployment: 'local',
  });
  const profiles = new Map<string, string>();
  try {
    for (const spec of specs) profiles.set(spec.model, createLocalProfile(spec));
  } catch (error) {
    for (const arn of profiles.values()) created.delete(arn);
    throw error;
  }
  return {
    profiles,
    remove: () => {
      for (const arn of profiles.values()) created.delete(arn);
    },
  };
}

/** Bedrock's answer to a CreateInferenceProfile it refuses. */
class InferenceProfileValidationError extends Error {
  override readonly name = 'ValidationException';
}

/**
 * CreateInferenceProfile on the twin: refuses what the resource schema of `AWS::Bedrock::ApplicationInferenceProfile`
 * refuses (name, description, source: the schema CloudFormation and CDK's synth check, which states Bedrock's own
 * constraints); answers the new profile's ARN. Twins started in one process (tests) share the account, so names
 * are not held unique here as they are in an account.
 */
export function createLocalProfile(spec: Pick<ApplicationProfileSpec, 'model' | 'name' | 'description' | 'copyFrom'>): string {
  const refusals = schemaRefusals(
    'AWS::Bedrock::ApplicationInferenceProfile',
    { InferenceProfileName: spec.name, Description: spec.description, ModelSource: { CopyFrom: spec.copyFrom } },
    LOCAL_REGION,
  );
  if (refusals.length > 0) {
    const detail = refusals.map((refusal) => `${refusal.property}: ${refusal.message}`).join('; ');
    throw new InferenceProfileValidationError(`${refusals.length} validation error${refusals.length === 1 ? '' : 's'} detected: ${detail}`);
  }
  const model = modelIdOfLocalArn(spec.copyFrom);
  if (model !== spec.model) throw new Error(`The twin cannot copy ${spec.copyFrom} for ${spec.model}`);
  const arn = `arn:aws:bedrock:${LOCAL_REGION}:${LOCAL_ACCOUNT}:application-inference-profile/${randomProfileId()}`;
  created.set(arn, { arn, name: spec.name, model, copyFrom: spec.copyFrom });
  return arn;
}

/** Bedrock's profile ids: 12 lowercase letters and digits. */
function randomProfileId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(12)].map((byte) => alphabet[byte % alphabet.length]).join('');
}
