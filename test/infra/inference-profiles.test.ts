import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { INFERENCE_PROFILES_ENV } from '#engine/inference-profiles.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { BEDROCK_CATALOG, catalogIds, regionProblem } from '#shared/bedrock-catalog.ts';
import { applicationInferenceProfiles, defaultBedrockModels } from '#lib/cdk/bedrock-models.ts';

const DEFAULT_BEDROCK_MODELS = defaultBedrockModels('us-east-1');
import { PlatformStack } from '#lib/cdk/stack.ts';

/**
 * Model spend in the budget: on-demand Bedrock calls carry no cost allocation tag, so the step function calls each
 * allowed model through an application inference profile of the stack, tagged like every resource with the
 * `Project` tag the budget filters on.
 */
const templateApp = (context: Record<string, unknown> = {}) =>
  new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], ...context } });

type Resource = { Type: string; Properties: Record<string, any> };
type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };
let stack: PlatformStack;
let template: Template;

beforeAll(() => {
  stack = new PlatformStack(templateApp({ monthlyBudgetUsd: '300' }), 'Costed', { env: { region: 'us-east-1' } });
  template = Template.fromStack(stack);
});

const profilesOf = (target: Template) => target.findResources('AWS::Bedrock::ApplicationInferenceProfile') as Record<string, Resource>;
const stepFunctionOf = (target: PlatformStack) =>
  Template.fromStack(target).findResources('AWS::Lambda::Function')[
    target.getLogicalId(target.engine.functions.WorkflowStep!.node.defaultChild as never)
  ] as Resource;
const bedrockStatementsOf = (target: PlatformStack, id: string): Statement[] => {
  const fn = target.engine.functions[id] ?? target.collection.functions[id]!;
  const roleId = target.getLogicalId(fn.role!.node.defaultChild as never);
  const policies = Object.values(
    Template.fromStack(target).findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } }),
  ) as Resource[];
  return policies
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[])
    .filter((statement) => JSON.stringify(statement.Action).includes('bedrock:'));
};
/** The profile a model id names, by its logical id in the template. */
const profileIdOf = (target: PlatformStack, model: string) => target.getLogicalId(target.engine.inferenceProfiles.profiles.get(model)!);
const arnOf = (target: PlatformStack, model: string) => ({ 'Fn::GetAtt': [profileIdOf(target, model), 'InferenceProfileArn'] });
const tagsOf = (resource: Resource) =>
  Object.fromEntries((resource.Properties.Tags as { Key: string; Value: string }[]).map((tag) => [tag.Key, tag.Value]));

describe('the application inference profiles', () => {
  it('are one per allowed model, named for the stack and the model, copying the model or its cross-region profile', () => {
    const profiles = profilesOf(template);
    expect(Object.keys(profiles).sort()).toEqual(DEFAULT_BEDROCK_MODELS.map((model) => profileIdOf(stack, model)).sort());
    const specs = applicationInferenceProfiles(DEFAULT_BEDROCK_MODELS, {
      partition: 'aws',
      region: 'us-east-1',
      account: '123456789012',
      deployment: 'Costed',
    });
    for (const model of DEFAULT_BEDROCK_MODELS) {
      const { Properties } = profiles[profileIdOf(stack, model)]!;
      expect(Properties.InferenceProfileName).toBe(specs.find((spec) => spec.model === model)!.name);
      expect(Properties.InferenceProfileName).toMatch(/^Costed-[0-9a-z-]+-[0-9a-f]{8}$/);
      const copyFrom = JSON.stringify(Properties.ModelSource.CopyFrom);
      if (model.startsWith('us.'))
        expect(copyFrom, model).toBe(
          JSON.stringify({
            'Fn::Join': [
              '',
              ['arn:', { Ref: 'AWS::Partition' }, ':bedrock:us-east-1:', { Ref: 'AWS::AccountId' }, `:inference-profile/${model}`],
            ],
          }),
        );
      else
        expect(copyFrom, model).toBe(
          JSON.stringify({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:bedrock:us-east-1::foundation-model/${model}`]] }),
        );
    }
    // Both kinds of source are in the default list: a base id and a cross-region profile.
    expect(DEFAULT_BEDROCK_MODELS.some((model) => model.startsWith('us.'))).toBe(true);
    expect(DEFAULT_BEDROCK_MODELS.some((model) => !model.startsWith('us.'))).toBe(true);
    // Nova Canvas is past its end of life: the stack creates no profile for it.
    expect(JSON.stringify(profiles)).not.toContain('nova-canvas');
  });

  it('each carry the Project tag the budget filters on, so the models’ spend counts against the budget', () => {
    const budgets = Object.values(template.findResources('AWS::Budgets::Budget')) as Resource[];
    expect(budgets).toHaveLength(1);
    const filters = budgets[0]!.Properties.Budget.CostFilters.TagKeyValue as string[];
    expect(filters).toHaveLength(1);
    const [, key, value] = /^user:([^$]+)\$(.+)$/.exec(filters[0]!)!;
    expect([key, value]).toEqual(['Project', 'workflow-ingest']);
    for (const [id, profile] of Object.entries(profilesOf(template))) {
      expect(tagsOf(profile), id).toMatchObject({ [key!]: value, Component: 'engine', CostCenter: 'unassigned' });
    }
  });

  it('follow the bedrockModels context', () => {
    const custom = new PlatformStack(templateApp({ bedrockModels: 'amazon.nova-micro-v1:0,us.amazon.nova-pro-v1:0' }), 'Custom', {
      env: { region: 'us-east-1' },
    });
    const names = Object.values(profilesOf(Template.fromStack(custom))).map((profile) => profile.Properties.InferenceProfileName as string);
    expect(names.sort()).toEqual([
      expect.stringMatching(/^Custom-amazon-nova-micro-v1-0-[0-9a-f]{8}$/),
      expect.stringMatching(/^Custom-us-amazon-nova-pro-v1-0-[0-9a-f]{8}$/),
    ]);
  });
});

describe('the step function', () => {
  it('is told the profiles in one environment variable, a JSON object from model id to profile ARN', () => {
    const value = stepFunctionOf(stack).Properties.Environment.Variables[INFERENCE_PROFILES_ENV] as { 'Fn::Join': [string, unknown[]] };
    // Resolved with placeholder ARNs, the joined parts are the JSON object CloudFormation will write.
    const json = value['Fn::Join'][1]
      .map((part) =>
        typeof part === 'string'
          ? part
          : `arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/${(part as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]}`,
      )
      .join('');
    expect(JSON.parse(json)).toEqual(
      Object.fromEntries(
        DEFAULT_BEDROCK_MODELS.map((model) => [
          model,
          `arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/${profileIdOf(stack, model)}`,
        ]),
      ),
    );
    for (const model of DEFAULT_BEDROCK_MODELS) expect(value['Fn::Join'][1]).toContainEqual(arnOf(stack, model));
    for (const [id, fn] of Object.entries(Template.fromStack(stack).findResources('AWS::Lambda::Function')) as [string, Resource][]) {
      if (id !== stack.getLogicalId(stack.engine.functions.WorkflowStep!.node.defaultChild as never))
        expect(JSON.stringify(fn.Properties.Environment ?? {}), id).not.toContain(INFERENCE_PROFILES_ENV);
    }
  });

  it('may invoke the profiles and what they copy, and nothing else of Bedrock', () => {
    const statements = bedrockStatementsOf(stack, 'WorkflowStep');
    expect(statements).toHaveLength(2);
    const [profiles, underneath] = statements as [Statement, Statement];
    expect(profiles.Action).toEqual(['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream', 'bedrock:GetInferenceProfile']);
    expect(profiles.Resource).toEqual(DEFAULT_BEDROCK_MODELS.map((model) => arnOf(stack, model)));
    expect(profiles.Condition).toBeUndefined();
    expect(underneath.Action).toEqual(['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream']);
    const resources = JSON.stringify(underneath.Resource);
    for (const model of DEFAULT_BEDROCK_MODELS) {
      if (model.startsWith('us.')) {
        expect(resources).toContain(`:inference-profile/${model}`);
        expect(resources).toContain(`:bedrock:*::foundation-model/${model.slice(3)}`);
      } else {
        expect(resources).toContain(`::foundation-model/${model}"`);
      }
    }
    expect(underneath.Resource).toHaveLength(
      DEFAULT_BEDROCK_MODELS.length + DEFAULT_BEDROCK_MODELS.filter((model) => model.startsWith('us.')).length,
    );
    // No wildcard model or action (the `*` region of a cross-region profile's model is the only one), no Converse action.
    expect(JSON.stringify(statements)).not.toMatch(/\/\*"|"\*"|"bedrock:\*"|Converse/);
    for (const task of taskFunctions.filter((candidate) => candidate.id !== 'WorkflowStep'))
      expect(bedrockStatementsOf(stack, task.id), task.id).toEqual([]);
  });

  it('may invoke what the profiles copy only through the stack’s own profiles: a direct, untagged call is refused', () => {
    // docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html: a Condition on bedrock:InferenceProfileArn,
    // in the statement that scopes to the foundation-model resources, as its example writes it (StringLike).
    for (const [target, models] of [
      [stack, DEFAULT_BEDROCK_MODELS],
      [
        new PlatformStack(templateApp({ bedrockModels: 'eu.amazon.nova-micro-v1:0,eu.amazon.nova-pro-v1:0' }), 'Conditioned', {
          env: { region: 'eu-central-1' },
        }),
        ['eu.amazon.nova-micro-v1:0', 'eu.amazon.nova-pro-v1:0'],
      ],
    ] as const) {
      const underneath = bedrockStatementsOf(target, 'WorkflowStep').find(
        (statement) => !JSON.stringify(statement.Resource).includes('Fn::GetAtt'),
      )!;
      expect(JSON.stringify(underneath.Resource)).toMatch(/foundation-model/);
      // Exactly the profiles, each once, in the allow-list's order: no wildcard, no other deployment's profile.
      expect(underneath.Condition).toEqual({ StringLike: { 'bedrock:InferenceProfileArn': models.map((model) => arnOf(target, model)) } });
    }
  });

  it('fits the profile map of every id a region allows into the function’s 4 KB of environment', () => {
    const every = catalogIds(BEDROCK_CATALOG.filter((model) => model.endOfLife === undefined))
      .filter((id) => regionProblem(id, 'us-east-1') === undefined)
      .join(',');
    expect(() => new PlatformStack(templateApp({ bedrockModels: every }), 'Everything', { env: { region: 'us-east-1' } })).not.toThrow();
  });
});
