import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { marketplaceProductIds } from '#lib/cdk/bedrock-models.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';

/**
 * A third-party model's first call in an account subscribes it to the model's AWS Marketplace product, on the
 * caller's behalf. Bedrock's model-access page (docs.aws.amazon.com/bedrock/latest/userguide/model-access.html): "Your
 * IAM role must have `aws-marketplace:Subscribe`, `aws-marketplace:Unsubscribe`, and `aws-marketplace:ViewSubscriptions`
 * permissions." and "For the `aws-marketplace:Subscribe` action only, you can use the `aws-marketplace:ProductId`
 * condition key." AWS's AmazonBedrockLimitedAccess holds all three to calls Bedrock makes (`aws:CalledViaLast`).
 */
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };

/** Skips Lambda bundling: the template is the subject. `bedrockModels`: the `-c bedrockModels=` context, else the default list. */
function synth(bedrockModels?: string): { stack: PlatformStack; template: Template } {
  const context: Record<string, unknown> = { 'aws:cdk:bundling-stacks': [] };
  if (bedrockModels !== undefined) context.bedrockModels = bedrockModels;
  const stack = new PlatformStack(new App({ builtinCloudFormationValidation: false, context }), 'Marketplace', {
    env: { region: 'us-east-1' },
  });
  return { stack, template: Template.fromStack(stack) };
}

const actionsOf = (statement: Statement) => [statement.Action].flat();
const isMarketplace = (statement: Statement) => actionsOf(statement).some((action) => action.startsWith('aws-marketplace:'));

/** The statements of every grants policy of the template, each with the logical ids of the roles it is attached to. */
function statementsOf(template: Template): { roles: string[]; statement: Statement }[] {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
    (policy.Properties.PolicyDocument.Statement as Statement[]).map((statement) => ({
      roles: ((policy.Properties.Roles ?? []) as { Ref: string }[]).map((role) => role.Ref),
      statement,
    })),
  );
}

const BY_BEDROCK = { 'aws:CalledViaLast': ['bedrock.amazonaws.com'] };

describe('with a third-party model in the allow-list (the default list)', () => {
  let stack: PlatformStack;
  let template: Template;
  let stepRole: string;
  beforeAll(() => {
    ({ stack, template } = synth());
    stepRole = stack.getLogicalId(stack.engine.functions.WorkflowStep!.role!.node.defaultChild as never);
  });

  it('holds a third-party model, whose Marketplace product the catalog names', () => {
    expect(marketplaceProductIds(stack.engine.bedrockModels)).toEqual(['prod-xdkflymybwmvi']);
  });

  it('grants the step function Subscribe on the allowed products, and only when Bedrock makes the call', () => {
    const products = marketplaceProductIds(stack.engine.bedrockModels);
    const subscribe = statementsOf(template).filter(({ statement }) => actionsOf(statement).includes('aws-marketplace:Subscribe'));
    expect(subscribe).toEqual([
      {
        roles: [stepRole],
        statement: {
          Effect: 'Allow',
          Action: 'aws-marketplace:Subscribe',
          Resource: '*',
          Condition: { StringEquals: { 'aws-marketplace:ProductId': products, ...BY_BEDROCK } },
        },
      },
    ]);
  });

  it('grants it ViewSubscriptions and Unsubscribe, which take no product key, only when Bedrock makes the call', () => {
    const others = statementsOf(template).filter(
      ({ statement }) => isMarketplace(statement) && !actionsOf(statement).includes('aws-marketplace:Subscribe'),
    );
    expect(others).toEqual([
      {
        roles: [stepRole],
        statement: {
          Effect: 'Allow',
          Action: ['aws-marketplace:ViewSubscriptions', 'aws-marketplace:Unsubscribe'],
          Resource: '*',
          Condition: { StringEquals: BY_BEDROCK },
        },
      },
    ]);
  });

  it('grants the three actions, each held to calls Bedrock makes, and nothing else of Marketplace, to no other role', () => {
    const marketplace = statementsOf(template).filter(({ statement }) => isMarketplace(statement));
    expect(marketplace.flatMap(({ statement }) => actionsOf(statement)).sort()).toEqual([
      'aws-marketplace:Subscribe',
      'aws-marketplace:Unsubscribe',
      'aws-marketplace:ViewSubscriptions',
    ]);
    for (const { roles, statement } of marketplace) {
      expect(roles).toEqual([stepRole]);
      expect(statement.Condition?.StringEquals).toMatchObject(BY_BEDROCK);
    }
  });
});

describe('without a third-party model in the allow-list', () => {
  it('grants no Marketplace action to any role (-c bedrockModels=amazon.nova-lite-v1:0)', () => {
    const { stack, template } = synth('amazon.nova-lite-v1:0');
    expect(stack.engine.bedrockModels).toEqual(['amazon.nova-lite-v1:0']);
    expect(statementsOf(template).filter(({ statement }) => isMarketplace(statement))).toEqual([]);
    expect(JSON.stringify(template.toJSON())).not.toContain('aws-marketplace');
  });
});
