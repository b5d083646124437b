import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  BEDROCK_SERVICE_PRINCIPAL,
  CALLED_VIA_LAST_KEY,
  bedrockModelArns,
  defaultBedrockModels,
  isInferenceProfile,
  marketplaceGrants,
  PROFILE_ACTIONS,
  profileTarget,
} from '#lib/cdk/bedrock-models.ts';
import { BEDROCK_PROFILES_OUTPUT } from '#lib/cdk/stack-outputs.ts';

/**
 * lib/admin/README.md's list of what `admin verify`'s credentials need for the model calls is what the stack grants its
 * step function (lib/cdk/bedrock-models.ts), in the README's placeholders: an operator who grants the list gets calls that
 * Bedrock authorizes, on the profiles and on every region's model a cross-region profile routes to, and the first call
 * to a third-party model subscribes the account ("Your IAM role must have `aws-marketplace:Subscribe`,
 * `aws-marketplace:Unsubscribe`, and `aws-marketplace:ViewSubscriptions` permissions",
 * https://docs.aws.amazon.com/bedrock/latest/userguide/model-access.html).
 */
const readme = readFileSync(new URL('../../lib/admin/README.md', import.meta.url), 'utf8');

/** The paragraph on `admin verify`'s permissions, on one line, and every `code` span it holds. */
function verifyParagraph(): { text: string; named: Set<string> } {
  const start = readme.indexOf('**Permissions for `admin verify`.**');
  expect(start).toBeGreaterThan(-1);
  const end = readme.indexOf('\n\n', start);
  const text = readme.slice(start, end).replace(/\s+/g, ' ');
  return { text, named: new Set([...text.matchAll(/`([^`]+)`/g)].map((match) => match[1]!)) };
}

/** A deployment's models, one of each kind: served in the region itself, and through a cross-region profile. */
const models = defaultBedrockModels('us-east-1');
const inRegion = models.find((model) => !isInferenceProfile(model))!;
const crossRegion = models.find((model) => isInferenceProfile(model))!;

/** The ARNs the stack grants for what the profiles copy, with the README's placeholders for the ids. */
function arnsAsTheReadmeWritesThem(): string[] {
  const where = { partition: 'aws', region: '<region>', account: '<account>' };
  const routedTo = profileTarget(crossRegion)!.model;
  return bedrockModelArns([inRegion, crossRegion], where).map((arn) =>
    arn.replace(crossRegion, '<profile id>').replace(routedTo, '<model>').replace(inRegion, '<model>'),
  );
}

describe("lib/admin/README.md's permissions for admin verify", () => {
  it('has a model of each kind to derive them from', () => {
    expect(inRegion).toBeDefined();
    expect(crossRegion).toBeDefined();
  });

  it('names every ARN the stack grants for what a profile copies, the model in every destination region included', () => {
    const { named } = verifyParagraph();

    const arns = arnsAsTheReadmeWritesThem();
    expect(arns).toEqual([
      'arn:aws:bedrock:<region>::foundation-model/<model>',
      'arn:aws:bedrock:<region>:<account>:inference-profile/<profile id>',
      'arn:aws:bedrock:*::foundation-model/<model>',
    ]);
    for (const arn of arns) expect(named, arn).toContain(arn);
    expect(named).toContain(BEDROCK_PROFILES_OUTPUT);
  });

  it("names the profile actions a ConverseStream call needs (IAM's InvokeModelWithResponseStream; InvokeModel is not called)", () => {
    const { named } = verifyParagraph();

    const needed = PROFILE_ACTIONS.filter((action) => action !== 'bedrock:InvokeModel');
    expect(needed).toEqual(['bedrock:InvokeModelWithResponseStream', 'bedrock:GetInferenceProfile']);
    for (const action of needed) expect(named, action).toContain(action);
  });

  it('names the AWS Marketplace actions the stack grants for a third-party model, and the condition it holds them to', () => {
    const { named } = verifyParagraph();

    const actions = marketplaceGrants(models).flatMap((grant) => grant.actions);
    expect(actions.sort()).toEqual(['aws-marketplace:Subscribe', 'aws-marketplace:Unsubscribe', 'aws-marketplace:ViewSubscriptions']);
    for (const action of actions) expect(named, action).toContain(action);
    expect(named).toContain(CALLED_VIA_LAST_KEY);
    expect(named).toContain(BEDROCK_SERVICE_PRINCIPAL);
  });
});
