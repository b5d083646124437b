import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { defaultBedrockModels } from '#lib/cdk/bedrock-models.ts';
import { PlatformStack } from '#lib/cdk/stack.ts';

/**
 * The stack is synthesized for one region, and its Bedrock profiles copy that region's geography: a `us.` profile
 * has no source region outside the US, so the same template deployed to Frankfurt would fail to create them. Each
 * synthesis runs CloudFormation's own resource schemas for that region (CDK's CloudFormation Validate, findings as
 * errors through cdk.json's `@aws-cdk/core:validateAgainstDefaultRules`).
 */
const CDK_CONTEXT = (JSON.parse(readFileSync('cdk.json', 'utf8')) as { context: Record<string, unknown> }).context;
const synthesized = (region: string, context: Record<string, unknown> = {}) => {
  const app = new App({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new PlatformStack(app, 'WorkflowIngestPlatform', { env: { region } });
  app.synth();
  return { stack, template: Template.fromStack(stack) };
};
type Profile = { Properties: { InferenceProfileName: string; ModelSource: { CopyFrom: unknown } } };
const sourcesOf = (template: Template) =>
  Object.values(template.findResources('AWS::Bedrock::ApplicationInferenceProfile') as Record<string, Profile>).map((profile) => {
    const text = JSON.stringify(profile.Properties.ModelSource.CopyFrom);
    return /(?:inference-profile|foundation-model)\/([^"]+)"/.exec(text)![1]!;
  });

describe('a synthesis for the deploy region', () => {
  it.each([
    ['us-east-1', /^(us\.)?(amazon|anthropic)\./],
    ['eu-central-1', /^eu\./],
    ['ap-northeast-1', /^(apac\.|jp\.|amazon\.nova-lite-v1:0$)/],
  ])('in %s passes CloudFormation’s schemas and copies that geography’s profiles', (region, geography) => {
    const { stack, template } = synthesized(region);
    const sources = sourcesOf(template);
    expect(sources.sort()).toEqual(defaultBedrockModels(region).sort());
    for (const source of sources) expect(source, `${region}: ${source}`).toMatch(geography);
    // The region is written out where it used to be a pseudo parameter, and no other region's profile is copied.
    expect(JSON.stringify(template.toJSON())).toContain(`:bedrock:${region}:`);
    if (region !== 'us-east-1') expect(sources.filter((source) => source.startsWith('us.'))).toEqual([]);
    expect(stack.engine.bedrockModels).toEqual(defaultBedrockModels(region));
  });

  it('refuses a region the catalog has no answer for, naming it', () => {
    expect(() => synthesized('cn-north-1')).toThrow(/No Bedrock model of the catalog can be called from cn-north-1/);
  });

  it('refuses a stack without a region, since its profiles depend on it', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    expect(() => new PlatformStack(app, 'Anywhere')).toThrow(/Stack Anywhere needs a region \(env\.region\)/);
  });

  it('refuses a listed model the region cannot call', () => {
    expect(() => synthesized('eu-central-1', { bedrockModels: 'us.amazon.nova-lite-v1:0' })).toThrow(
      'CDK context bedrockModels: us.amazon.nova-lite-v1:0 cannot be called from eu-central-1: its profile cannot be called from eu-central-1; use eu.amazon.nova-lite-v1:0',
    );
  });

  it('fails on a broken CloudFormation schema rule, naming the resource and the property', () => {
    const app = new App({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
    const stack = new PlatformStack(app, 'WorkflowIngestPlatform', { env: { region: 'us-east-1' } });
    const profile = stack.engine.inferenceProfiles.profiles.get('amazon.nova-micro-v1:0')!;
    // The name the stack once generated, which CloudFormation refuses.
    profile.addPropertyOverride('InferenceProfileName', 'WorkflowIngestPlatform-amazon.nova-micro-v1:0');
    let message = '';
    try {
      app.synth();
    } catch (error) {
      message = String(error);
    }
    expect(message).toMatch(/^ValidationFailed: [\s\S]*\nERROR InferenceProfileName: /);
    expect(message).toContain(stack.getLogicalId(profile));
    expect(message).toContain(
      "InferenceProfileName: 'WorkflowIngestPlatform-amazon.nova-micro-v1:0' does not match pattern '^([0-9a-zA-Z][ _-]?)+$'",
    );
  });
});
