import { createHash } from 'node:crypto';
import { BEDROCK_CATALOG, catalogIds, lookUpModel, PROFILE_PREFIX, regionalIds, regionProblem } from '#shared/bedrock-catalog.ts';

/**
 * The Bedrock models and inference profiles published workflows may name (llm, agent and image nodes): CDK grants
 * the step function exactly these, and the twin's IAM front door allows exactly these. By default every active
 * model of the catalog (functions/shared/bedrock-catalog.ts) that can be called from the deployment's region: its
 * own id where Bedrock serves it on demand there, and the cross-region profile of the region's geography (`us.`,
 * `eu.`, `apac.`, `jp.`, `au.`, or `global.` where the model has no geographic profile for that region). Change the
 * list with `cdk deploy -c bedrockModels=id1,id2` (or the stack's `bedrockModels` prop), within the catalog and
 * callable from the region.
 */
export function defaultBedrockModels(region: string): string[] {
  const models = regionalIds(
    BEDROCK_CATALOG.filter((model) => model.endOfLife === undefined),
    region,
  );
  if (models.length === 0) {
    throw new Error(
      `No Bedrock model of the catalog can be called from ${region}; deploy to a region the catalog knows ` +
        `(${knownRegions().join(', ')}) or set bedrockModels`,
    );
  }
  return models;
}

/** The regions from which at least one active model of the catalog can be called. */
function knownRegions(): string[] {
  const active = BEDROCK_CATALOG.filter((model) => model.endOfLife === undefined);
  const regions = active.flatMap((model) => [...model.inRegion, ...Object.values(model.profiles).flat()]);
  return [...new Set(regions)].sort();
}

const MODEL_ID = /^[a-z0-9-]+(\.[A-Za-z0-9-]+)+(:[A-Za-z0-9-]+)*$/;

export function isInferenceProfile(modelId: string): boolean {
  return PROFILE_PREFIX.test(modelId);
}

/** A cross-region inference profile's geography (`us`, `eu`, `global`, ...) and the foundation model it routes to. */
export function profileTarget(profileId: string): { geography: string; model: string } | undefined {
  const match = PROFILE_PREFIX.exec(profileId);
  return match ? { geography: match[1]!, model: profileId.slice(match[0].length) } : undefined;
}

/**
 * A context value: an array of ids or a comma-separated string; undefined gives the region's default list. Every id
 * must be one the catalog allows, not past its end of life at `now` (Bedrock would refuse every call to it), and
 * callable from `region` (a `us.` profile has no source outside the US).
 */
export function parseBedrockModels(value: unknown, region: string, now: number = Date.now()): string[] {
  if (value === undefined) return defaultBedrockModels(region);
  const entries: unknown[] | undefined = Array.isArray(value)
    ? (value as unknown[])
    : typeof value === 'string'
      ? value.split(',')
      : undefined;
  if (!entries) throw new Error(`CDK context bedrockModels must be a list of model ids, got ${JSON.stringify(value)}`);
  const models = entries.map((entry): unknown => (typeof entry === 'string' ? entry.trim() : entry));
  const bad = models.find((model) => typeof model !== 'string' || !MODEL_ID.test(model));
  if (bad !== undefined)
    throw new Error(`CDK context bedrockModels: ${JSON.stringify(bad)} is not a Bedrock model id (e.g. amazon.nova-lite-v1:0)`);
  if (models.length === 0) throw new Error('CDK context bedrockModels is empty');
  const allowed = catalogIds();
  for (const model of models as string[]) {
    const found = lookUpModel(model, now);
    if (!found || !allowed.includes(model))
      throw new Error(`CDK context bedrockModels: ${model} is not a model the product supports; choose from ${allowed.join(', ')}`);
    if (found.state === 'ended')
      throw new Error(`CDK context bedrockModels: ${model} reached end of life on Bedrock on ${found.model.endOfLife}`);
    const elsewhere = regionProblem(model, region);
    if (elsewhere) throw new Error(`CDK context bedrockModels: ${elsewhere}`);
  }
  return [...new Set(models as string[])];
}

/**
 * What a call to these models reaches, which IAM authorizes too: a foundation model in the stack's region; a
 * cross-region inference profile in the account, plus its model in every region, because the profile routes the call
 * to another region's model. The step function calls through the deployment's application inference profiles
 * (`applicationInferenceProfiles`), and is granted these as what the profiles copy.
 */
export function bedrockModelArns(models: readonly string[], where: { partition: string; region: string; account: string }): string[] {
  return models.flatMap((model) => {
    const target = profileTarget(model);
    return target
      ? [
          `arn:${where.partition}:bedrock:${where.region}:${where.account}:inference-profile/${model}`,
          `arn:${where.partition}:bedrock:*::foundation-model/${target.model}`,
        ]
      : [`arn:${where.partition}:bedrock:${where.region}::foundation-model/${model}`];
  });
}

/** What a call to a model needs, on the profile and on what it copies; IAM has no separate Converse action. */
export const INVOKE_ACTIONS: readonly string[] = ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'];

/**
 * What the step function may do on the deployment's application inference profiles: invoke them, and
 * `bedrock:GetInferenceProfile`, which the runtime never calls itself but which Bedrock lists as needed to invoke
 * through a profile: "bedrock:GetInferenceProfile – Required to run inference with an inference profile."
 * (docs.aws.amazon.com/bedrock/latest/userguide/inference-prereq.html). The twin's IAM front door asks for it on
 * every call through a profile (lib/twin/iam/required-permissions.ts).
 */
export const PROFILE_ACTIONS: readonly string[] = [...INVOKE_ACTIONS, 'bedrock:GetInferenceProfile'];

/**
 * The request context key Bedrock sets to the inference profile a call names (absent on a direct call to a model).
 * "To restrict user access such that they can invoke a foundation model only through an inference profile, add a
 * `Condition` field and use the [...] condition key. Specify the inference profile that you want to filter access
 * on. This condition can be included in a statement that scopes to the `foundation-model` resources."
 * (docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html, whose examples write
 * `"StringLike": {"bedrock:InferenceProfileArn": <profile ARN>}`).
 */
export const INFERENCE_PROFILE_ARN_KEY = 'bedrock:InferenceProfileArn';

/**
 * The condition on the grant of what the deployment's profiles copy (`bedrockModelArns`): a call reaches a foundation
 * model or a system cross-region profile only when it names one of `profileArns`, the deployment's application
 * inference profiles. A direct on-demand call, which Bedrock bills without any cost allocation tag, is refused, and so
 * is a call through a system profile or another deployment's profile. CDK writes it on the role
 * (constructs/inference-profiles.ts); the twin's policy model evaluates the same object (lib/twin/iam/function-policy.ts).
 */
export function throughProfilesCondition(profileArns: readonly string[]): { StringLike: Record<string, string[]> } {
  return { StringLike: { [INFERENCE_PROFILE_ARN_KEY]: [...profileArns] } };
}

/**
 * The AWS Marketplace products of the third-party models in `models`: on an account's first call to one, Bedrock
 * subscribes the account on behalf of the caller, which needs `aws-marketplace:Subscribe` on that product.
 */
export function marketplaceProductIds(models: readonly string[]): string[] {
  // Only the catalog entry is read, so the time given is beside the point.
  const ids = models.flatMap((model) => lookUpModel(model, 0)?.model.marketplaceProductId ?? []);
  return [...new Set(ids)].sort();
}

/** The condition key naming the last service that made a request on the caller's behalf, and Bedrock's name there. */
export const CALLED_VIA_LAST_KEY = 'aws:CalledViaLast';
export const BEDROCK_SERVICE_PRINCIPAL = 'bedrock.amazonaws.com';
/** The one condition key of `aws-marketplace:Subscribe` (ViewSubscriptions and Unsubscribe take none). */
export const MARKETPLACE_PRODUCT_KEY = 'aws-marketplace:ProductId';

/**
 * What the step function's role needs for a third-party model's first call in an account, which subscribes the
 * account to the model's AWS Marketplace product on the caller's behalf. Bedrock's model-access page: "Your IAM role
 * must have `aws-marketplace:Subscribe`, `aws-marketplace:Unsubscribe`, and `aws-marketplace:ViewSubscriptions`
 * permissions." and "For the `aws-marketplace:Subscribe` action only, you can use the `aws-marketplace:ProductId`
 * condition key." (docs.aws.amazon.com/bedrock/latest/userguide/model-access.html). As AWS's managed policy
 * AmazonBedrockLimitedAccess grants them, each holds only when Bedrock makes the call (`aws:CalledViaLast`): the
 * function itself can neither subscribe nor unsubscribe the account; Subscribe is held to the allowed models'
 * products too. None without a third-party model. CDK writes these on the role (constructs/workflow-engine.ts); the
 * twin's policy model evaluates the same (lib/twin/iam/function-policy.ts).
 */
export function marketplaceGrants(
  models: readonly string[],
): { actions: string[]; conditions: { StringEquals: Record<string, string[]> } }[] {
  const products = marketplaceProductIds(models);
  if (products.length === 0) return [];
  const byBedrock = { [CALLED_VIA_LAST_KEY]: [BEDROCK_SERVICE_PRINCIPAL] };
  return [
    { actions: ['aws-marketplace:Subscribe'], conditions: { StringEquals: { [MARKETPLACE_PRODUCT_KEY]: products, ...byBedrock } } },
    { actions: ['aws-marketplace:ViewSubscriptions', 'aws-marketplace:Unsubscribe'], conditions: { StringEquals: byBedrock } },
  ];
}

/**
 * What an application inference profile of `model` copies (its `modelSource.copyFrom`): the foundation model in the
 * deployment's region for a base id, the system-defined cross-region inference profile for a `us.`/`eu.`/`global.` id
 * (the application profile then routes as that profile does).
 */
export function profileSourceArn(model: string, where: { partition: string; region: string; account: string }): string {
  return isInferenceProfile(model)
    ? `arn:${where.partition}:bedrock:${where.region}:${where.account}:inference-profile/${model}`
    : `arn:${where.partition}:bedrock:${where.region}::foundation-model/${model}`;
}

/** One application inference profile of the deployment: the model id workflows name, and what the profile is made of. */
export interface ApplicationProfileSpec {
  /** The logical model id (the allow-list's, the price sheet's): what workflows name and usage is metered by. */
  readonly model: string;
  /**
   * `InferenceProfileName`: unique in the account and region, at most 64 characters of `^([0-9a-zA-Z][ _-]?)+$`
   * (the resource schema's pattern, which Bedrock's CreateInferenceProfile enforces too: no `.` or `:`).
   */
  readonly name: string;
  /** `Description`: at most 200 characters of `^([0-9a-zA-Z:.][ _-]?)+$`, where `.` and `:` are allowed. */
  readonly description: string;
  /** `modelSource.copyFrom`. */
  readonly copyFrom: string;
}

const PROFILE_NAME = /^([0-9a-zA-Z][ _-]?)+$/;
const PROFILE_NAME_MAX = 64;
const DESCRIPTION = /^([0-9a-zA-Z:.][ _-]?)+$/;
const DESCRIPTION_MAX = 200;

/**
 * The deployment's application inference profiles, one per allowed model, in the list's order. On-demand Bedrock
 * calls carry no cost allocation tag; a call through a tagged application inference profile is billed with the
 * profile's tags, so the stack's `Project` tag (and the budget filtering on it) sees the models' spend. CDK creates
 * these (constructs/inference-profiles.ts); the twin's Bedrock stand-in creates the same at start-up
 * (lib/twin/bedrock-profiles.ts), so both run the profile route.
 *
 * Every listed model gets one: "Application inference profiles can be created from most models supported in Amazon
 * Bedrock. Some models, such as embedding models, do not support inference profiles."
 * (docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html, "Supported Regions and models for
 * application inference profiles"; its earlier revision: "from all models and inference profiles supported in Amazon
 * Bedrock"). The catalog holds no embedding model, and a list holds no model past its end of life (`parseBedrockModels`),
 * so Nova Canvas, the catalog's image model, gets none.
 */
export function applicationInferenceProfiles(
  models: readonly string[],
  where: { partition: string; region: string; account: string; deployment: string },
): ApplicationProfileSpec[] {
  const deployment = where.deployment.replace(/[^0-9A-Za-z:.]+/g, '-').replace(/^-+|-+$/g, '') || 'deployment';
  return models.map((model) => {
    const description = `${deployment} workflow engine calls to ${model} tagged for cost allocation`
      .slice(0, DESCRIPTION_MAX)
      .replace(/ +$/, '');
    const name = profileName(deployment, model, description);
    if (!PROFILE_NAME.test(name) || name.length > PROFILE_NAME_MAX)
      throw new Error(`No valid inference profile name for ${model} in ${where.deployment}: ${name}`);
    if (!DESCRIPTION.test(description))
      throw new Error(`No valid inference profile description for ${model} in ${where.deployment}: ${description}`);
    return { model, name, description, copyFrom: profileSourceArn(model, where) };
  });
}

/** Letters and digits of `text`, each run of anything else one `-`: what a profile name may hold. */
const nameSlug = (text: string) =>
  text
    .split(/[^0-9A-Za-z]+/)
    .filter(Boolean)
    .join('-');

/**
 * `<deployment>-<model>-<hash>`, cut to fit (the deployment's part first). A profile's name, description and source
 * are create-only: changing any of them makes CloudFormation create the replacement before it deletes the old one,
 * and a replacement under the old name would collide with it. So the hash is taken of all three inputs (the model
 * id fixes the source within a stack's region and account; the description names the whole deployment): a profile
 * keeps its name for as long as it can be kept in place, and gets a new one exactly when it must be replaced.
 */
function profileName(deployment: string, model: string, description: string): string {
  const hash = createHash('sha256').update(`${model}\n${description}`).digest('hex').slice(0, 8);
  const modelPart = nameSlug(model)
    .slice(-(PROFILE_NAME_MAX - hash.length - 1))
    .replace(/^-+/, '');
  const room = PROFILE_NAME_MAX - modelPart.length - hash.length - 2;
  const deploymentPart = nameSlug(deployment).slice(0, Math.max(0, room)).replace(/-+$/, '');
  return [deploymentPart, modelPart, hash].filter(Boolean).join('-');
}
