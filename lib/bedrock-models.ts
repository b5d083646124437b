/**
 * The Bedrock models and inference profiles published workflows may name (llm, agent and image nodes): CDK grants
 * the step function exactly these, and the twin's IAM front door allows exactly these. Change the list with
 * `cdk deploy -c bedrockModels=id1,id2` (or the stack's `bedrockModels` prop).
 */
export const DEFAULT_BEDROCK_MODELS: readonly string[] = [
  'amazon.nova-micro-v1:0',
  'amazon.nova-lite-v1:0',
  'amazon.nova-pro-v1:0',
  'us.amazon.nova-micro-v1:0',
  'us.amazon.nova-lite-v1:0',
  'us.amazon.nova-pro-v1:0',
  'amazon.nova-canvas-v1:0',
  'anthropic.claude-3-5-haiku-20241022-v1:0',
  'us.anthropic.claude-3-5-haiku-20241022-v1:0',
];

const MODEL_ID = /^[a-z0-9-]+(\.[A-Za-z0-9-]+)+(:[A-Za-z0-9-]+)*$/;
/** Cross-region inference profiles are named by a geography before the model id. */
const PROFILE_PREFIX = /^(us|eu|apac|us-gov|ca|jp|au|global)\./;

export function isInferenceProfile(modelId: string): boolean {
  return PROFILE_PREFIX.test(modelId);
}

/** A cross-region inference profile's geography (`us`, `eu`, `global`, ...) and the foundation model it routes to. */
export function profileTarget(profileId: string): { geography: string; model: string } | undefined {
  const match = PROFILE_PREFIX.exec(profileId);
  return match ? { geography: match[1]!, model: profileId.slice(match[0].length) } : undefined;
}

/** A context value: an array of ids or a comma-separated string; undefined gives the default list. */
export function parseBedrockModels(value: unknown): string[] {
  if (value === undefined) return [...DEFAULT_BEDROCK_MODELS];
  const entries: unknown[] | undefined = Array.isArray(value) ? (value as unknown[]) : typeof value === 'string' ? value.split(',') : undefined;
  if (!entries) throw new Error(`CDK context bedrockModels must be a list of model ids, got ${JSON.stringify(value)}`);
  const models = entries.map((entry): unknown => (typeof entry === 'string' ? entry.trim() : entry));
  const bad = models.find((model) => typeof model !== 'string' || !MODEL_ID.test(model));
  if (bad !== undefined) throw new Error(`CDK context bedrockModels: ${JSON.stringify(bad)} is not a Bedrock model id (e.g. amazon.nova-lite-v1:0)`);
  if (models.length === 0) throw new Error('CDK context bedrockModels is empty');
  return [...new Set(models as string[])];
}

/**
 * The ARNs a grant names: a foundation model in the stack's region; a cross-region inference profile in the account,
 * plus its model in every region, because the profile routes the call to another region's model.
 */
export function bedrockModelArns(models: readonly string[], where: { partition: string; region: string; account: string }): string[] {
  return models.flatMap((model) => {
    const target = profileTarget(model);
    return target
      ? [`arn:${where.partition}:bedrock:${where.region}:${where.account}:inference-profile/${model}`, `arn:${where.partition}:bedrock:*::foundation-model/${target.model}`]
      : [`arn:${where.partition}:bedrock:${where.region}::foundation-model/${model}`];
  });
}
