import { AccessDeniedException, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createBedrockClient } from '#shared/clients/bedrock.ts';
import { marketplaceProductIds } from '#lib/cdk/bedrock-models.ts';
import { startBedrockStandIn, type BedrockStandIn } from '#lib/twin/bedrock-stand-in.ts';
import { startFrontDoor, type AccessDenial, type LocalPrincipal } from '#lib/twin/iam/front-door.ts';
import { functionPolicy, type Policy } from '#lib/twin/iam/function-policy.ts';
import { bedrockPermissions } from '#lib/twin/iam/required-permissions.ts';

/**
 * A third-party model's first call in an account subscribes it to the model's AWS Marketplace product: Bedrock calls
 * Marketplace on the caller's behalf, and "Your IAM role must have `aws-marketplace:Subscribe`,
 * `aws-marketplace:Unsubscribe`, and `aws-marketplace:ViewSubscriptions` permissions"
 * (docs.aws.amazon.com/bedrock/latest/userguide/model-access.html). The twin's front door checks all three on every
 * such call (it keeps no subscriptions), as calls Bedrock makes, against the same grant CDK writes.
 */
const CLAUDE = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
const NOVA = 'us.amazon.nova-lite-v1:0';
const MODELS = [NOVA, CLAUDE];
const [PRODUCT] = marketplaceProductIds([CLAUDE]);
const MARKETPLACE_ACTIONS = ['aws-marketplace:Subscribe', 'aws-marketplace:ViewSubscriptions', 'aws-marketplace:Unsubscribe'];
/** Bedrock's answer to a role without them, word for word (it names two of the three, whichever is missing). */
const BEDROCK_REFUSAL =
  'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model. Refer to the Amazon Bedrock documentation for further details. Your AWS Marketplace subscription for this model cannot be completed at this time. If you recently fixed this issue, try again after 2 minutes.';
const BY_BEDROCK = { 'aws:CalledViaLast': 'bedrock.amazonaws.com' };

/** The step function's role as CDK builds it for MODELS (the grants on the models themselves unconditioned). */
const stepPolicy = functionPolicy({ id: 'WorkflowStep', tables: {}, invokesBedrock: true }, MODELS);
const principal = (name: string, policy: Policy): LocalPrincipal => ({
  name,
  accessKeyId: name.toUpperCase(),
  secretAccessKey: `${name}-secret`,
  policy,
});
const fullGrant = principal('FullGrant', stepPolicy);
/** The same role with `action` left out, as a hand-written role that forgot it would be. */
const lacking = (action: string) =>
  principal(`Without${action.replace('aws-marketplace:', '')}`, {
    allows: (asked, resource, context) => asked !== action && stepPolicy.allows(asked, resource, context),
  });
const withoutEach = MARKETPLACE_ACTIONS.map(lacking);

let bedrock: BedrockStandIn;
let door: { endpoint: string; close(): Promise<void> };
const denials: AccessDenial[] = [];

beforeAll(async () => {
  bedrock = await startBedrockStandIn();
  door = await startFrontDoor({
    service: 'bedrock',
    upstream: bedrock.endpoint,
    port: 0,
    principals: [fullGrant, ...withoutEach],
    onDenied: (denial) => denials.push(denial),
  });
});
afterAll(async () => {
  await door?.close();
  await bedrock?.close();
});
beforeEach(() => {
  bedrock.reset();
  denials.length = 0;
});

const converse = (modelId: string, who: LocalPrincipal) =>
  createBedrockClient({
    endpoint: door.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: who.accessKeyId, secretAccessKey: who.secretAccessKey },
    maxAttempts: 1,
  }).send(new ConverseStreamCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
const refusal = (sent: Promise<unknown>) =>
  sent.then(
    () => undefined,
    (error: Error & { $metadata?: { httpStatusCode?: number } }) => error,
  );

describe("what a third-party model's call needs of Marketplace", () => {
  const needs = (modelId: string) =>
    bedrockPermissions({
      method: 'POST',
      url: `/model/${encodeURIComponent(modelId)}/converse-stream`,
      target: '',
      body: Buffer.alloc(0),
    }).filter((needed) => needed.action.startsWith('aws-marketplace:'));

  it("is all three actions, each as a call Bedrock makes, Subscribe to the model's product", () => {
    expect(PRODUCT).toBe('prod-xdkflymybwmvi');
    expect(needs(CLAUDE)).toEqual([
      {
        action: 'aws-marketplace:Subscribe',
        resource: `aws-marketplace:product/${PRODUCT}`,
        context: { ...BY_BEDROCK, 'aws-marketplace:ProductId': PRODUCT },
        refusal: BEDROCK_REFUSAL,
      },
      { action: 'aws-marketplace:ViewSubscriptions', resource: '*', context: BY_BEDROCK, refusal: BEDROCK_REFUSAL },
      { action: 'aws-marketplace:Unsubscribe', resource: '*', context: BY_BEDROCK, refusal: BEDROCK_REFUSAL },
    ]);
  });

  it("is nothing for Amazon's own models", () => {
    expect(needs(NOVA)).toEqual([]);
  });
});

describe('a third-party model through the front door', () => {
  it('answers the role granted all three as Bedrock would', async () => {
    await expect(converse(CLAUDE, fullGrant)).resolves.toBeDefined();
    expect(denials).toEqual([]);
  });

  for (const [index, action] of MARKETPLACE_ACTIONS.entries()) {
    it(`refuses a role without ${action} with Bedrock's AccessDeniedException, and never reaches the model`, async () => {
      const who = withoutEach[index]!;
      const refused = await refusal(converse(CLAUDE, who));
      expect(refused).toBeInstanceOf(AccessDeniedException);
      expect(refused!.$metadata?.httpStatusCode).toBe(403);
      expect(refused!.message).toBe(BEDROCK_REFUSAL);
      expect(denials).toEqual([expect.objectContaining({ principal: who.name, action })]);
      expect(bedrock.requests).toEqual([]);
    });
  }

  it("lets the same roles call Amazon's models, which need no subscription", async () => {
    for (const who of withoutEach) await expect(converse(NOVA, who)).resolves.toBeDefined();
    expect(denials).toEqual([]);
  });
});

describe("the step function's Marketplace grant, as CDK writes it", () => {
  const subscribe = (context: Record<string, string>) =>
    stepPolicy.allows('aws-marketplace:Subscribe', `aws-marketplace:product/${PRODUCT}`, context);

  it('allows the three actions when Bedrock makes the call', () => {
    expect(subscribe({ ...BY_BEDROCK, 'aws-marketplace:ProductId': PRODUCT! })).toBe(true);
    expect(stepPolicy.allows('aws-marketplace:ViewSubscriptions', '*', BY_BEDROCK)).toBe(true);
    expect(stepPolicy.allows('aws-marketplace:Unsubscribe', '*', BY_BEDROCK)).toBe(true);
  });

  it('refuses every one of them to a direct call by the function, which carries no aws:CalledViaLast', () => {
    expect(subscribe({ 'aws-marketplace:ProductId': PRODUCT! })).toBe(false);
    expect(stepPolicy.allows('aws-marketplace:ViewSubscriptions', '*')).toBe(false);
    expect(stepPolicy.allows('aws-marketplace:Unsubscribe', '*')).toBe(false);
    // Through another service, the last one named is that service, not Bedrock.
    expect(stepPolicy.allows('aws-marketplace:Unsubscribe', '*', { 'aws:CalledViaLast': 'cloudformation.amazonaws.com' })).toBe(false);
  });

  it('refuses a subscription to a product no allowed model sells', () => {
    expect(subscribe({ ...BY_BEDROCK, 'aws-marketplace:ProductId': 'prod-someoneelse' })).toBe(false);
    expect(subscribe(BY_BEDROCK)).toBe(false);
  });

  it('holds none of them without a third-party model in the list, nor for a function that does not invoke Bedrock', () => {
    const amazonOnly = functionPolicy({ id: 'WorkflowStep', tables: {}, invokesBedrock: true }, ['amazon.nova-lite-v1:0']);
    const bystander = functionPolicy({ id: 'Bystander', tables: {} }, MODELS);
    for (const policy of [amazonOnly, bystander]) {
      expect(
        policy.allows('aws-marketplace:Subscribe', `aws-marketplace:product/${PRODUCT}`, {
          ...BY_BEDROCK,
          'aws-marketplace:ProductId': PRODUCT!,
        }),
      ).toBe(false);
      expect(policy.allows('aws-marketplace:ViewSubscriptions', '*', BY_BEDROCK)).toBe(false);
      expect(policy.allows('aws-marketplace:Unsubscribe', '*', BY_BEDROCK)).toBe(false);
    }
  });
});
