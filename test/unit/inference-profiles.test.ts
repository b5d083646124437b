import { afterEach, describe, expect, it, vi } from 'vitest';
import { INFERENCE_PROFILES_ENV, invocationModelId, parseInferenceProfiles } from '#engine/inference-profiles.ts';
import { ExecutionFailure } from '#engine/execution-failure.ts';
import { applicationInferenceProfiles, defaultBedrockModels, profileSourceArn } from '#lib/cdk/bedrock-models.ts';

/** Which identifier a Bedrock call sends, and the profiles a deployment creates for its allow-list. */
const ARN = (id: string) => `arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/${id}`;
const where = { partition: 'aws', region: 'us-east-1', account: '123456789012' };

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe('the step function’s map from model id to application inference profile', () => {
  it('sends the profile ARN for a mapped model, and fails the execution naming a model that has none instead of calling it', () => {
    const profiles = parseInferenceProfiles(
      JSON.stringify({ 'us.amazon.nova-lite-v1:0': ARN('a1b2c3d4e5f6'), 'amazon.nova-micro-v1:0': ARN('zz9yy8xx7ww6') }),
    );
    expect(invocationModelId('us.amazon.nova-lite-v1:0', profiles)).toBe(ARN('a1b2c3d4e5f6'));
    expect(invocationModelId('amazon.nova-micro-v1:0', profiles)).toBe(ARN('zz9yy8xx7ww6'));
    expect(invocationModelId(undefined, profiles)).toBeUndefined();
    // Outside the deployment's list: no profile, so no call (a direct one would bypass the tag, and the role refuses it).
    const outside = () => invocationModelId('eu.amazon.nova-pro-v1:0', profiles);
    expect(outside).toThrow(ExecutionFailure);
    expect(outside).toThrow(
      "Bedrock model eu.amazon.nova-pro-v1:0 is not one this deployment allows: it has no application inference profile (add it to the deployment's bedrockModels)",
    );
    expect(() => invocationModelId('amazon.nova-lite-v1:0', new Map())).toThrow(ExecutionFailure);
  });

  it('fails the run of a workflow published before its model ended by saying it ended, not by asking for it in the list', () => {
    const profiles = parseInferenceProfiles(JSON.stringify({ 'amazon.nova-micro-v1:0': ARN('zz9yy8xx7ww6') }));
    const today = Date.parse('2026-11-26T00:00:00Z');
    expect(() => invocationModelId('amazon.nova-canvas-v1:0', profiles, today)).toThrow(
      new ExecutionFailure(
        'Bedrock model "amazon.nova-canvas-v1:0" reached end of life on Bedrock on 2026-09-30; no Bedrock image model is supported now: use provider "scripted" offline or remove the image node',
      ),
    );
    expect(() => invocationModelId('anthropic.claude-3-5-haiku-20241022-v1:0', profiles, today)).toThrow(
      'Bedrock model "anthropic.claude-3-5-haiku-20241022-v1:0" reached end of life on Bedrock on 2026-06-19; use us.anthropic.claude-haiku-4-5-20251001-v1:0',
    );
    // Before its end it is a model outside this deployment's list.
    expect(() => invocationModelId('amazon.nova-canvas-v1:0', profiles, Date.parse('2026-09-01T00:00:00Z'))).toThrow(
      /is not one this deployment allows/,
    );
  });

  it('refuses a malformed value whole, naming the variable', () => {
    const refusal = (value: string) => () => parseInferenceProfiles(value);
    expect(refusal('{')).toThrow(`${INFERENCE_PROFILES_ENV} is not JSON`);
    expect(refusal('[]')).toThrow(/must be a JSON object from model id to inference profile ARN/);
    expect(refusal(JSON.stringify({ 'amazon.titan-text-express-v1': ARN('abc') }))).toThrow(
      /"amazon.titan-text-express-v1" is not a model the product supports/,
    );
    expect(
      refusal(
        JSON.stringify({ 'amazon.nova-lite-v1:0': 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-lite-v1:0' }),
      ),
    ).toThrow(/the profile of amazon.nova-lite-v1:0 is not an application inference profile ARN/);
    expect(refusal(JSON.stringify({ 'amazon.nova-lite-v1:0': 42 }))).toThrow(/not an application inference profile ARN: 42/);
    expect(refusal(JSON.stringify({ 'amazon.nova-lite-v1:0': ARN('same'), 'amazon.nova-pro-v1:0': ARN('same') }))).toThrow(
      /is given for two models/,
    );
  });

  it('reads the variable as the module loads: a malformed one fails the cold start', async () => {
    vi.stubEnv(INFERENCE_PROFILES_ENV, '{"amazon.nova-lite-v1:0": "nope"}');
    await expect(import('#engine/inference-profiles.ts')).rejects.toThrow(/not an application inference profile ARN/);
    vi.resetModules();
    vi.stubEnv(INFERENCE_PROFILES_ENV, JSON.stringify({ 'amazon.nova-lite-v1:0': ARN('a1b2c3d4e5f6') }));
    const loaded = await import('#engine/inference-profiles.ts');
    expect(loaded.invocationModelId('amazon.nova-lite-v1:0')).toBe(ARN('a1b2c3d4e5f6'));
    expect(() => loaded.invocationModelId('amazon.nova-pro-v1:0')).toThrow(
      /Bedrock model amazon\.nova-pro-v1:0 is not one this deployment allows/,
    );
  });
});

describe('the step function’s dependencies', () => {
  it('need the profile map: a missing one fails the cold start before anything else is built', async () => {
    vi.stubEnv(INFERENCE_PROFILES_ENV, undefined);
    const { stepFromEnv } = await import('#engine/step-wiring.ts');
    expect(() => stepFromEnv()).toThrow(`Missing required environment variable ${INFERENCE_PROFILES_ENV}`);
    vi.resetModules();
    vi.stubEnv(INFERENCE_PROFILES_ENV, ' ');
    await expect(import('#engine/step-wiring.ts')).rejects.toThrow(`${INFERENCE_PROFILES_ENV} is not JSON`);
  });

  it('take a well-formed map and go on to what else they need', async () => {
    vi.stubEnv(INFERENCE_PROFILES_ENV, JSON.stringify({ 'amazon.nova-lite-v1:0': ARN('a1b2c3d4e5f6') }));
    const { stepFromEnv } = await import('#engine/step-wiring.ts');
    // The next requirement (a table) is what fails now, not the profiles.
    expect(() => stepFromEnv()).toThrow(/Missing required environment variable (?!BEDROCK_INFERENCE_PROFILES)/);
  });
});

describe('the deployment’s application inference profiles', () => {
  it('makes one per allowed model, copying the foundation model for a base id and the system profile for a geographic one', () => {
    const models = defaultBedrockModels('us-east-1');
    const specs = applicationInferenceProfiles(models, { ...where, deployment: 'WorkflowIngestPlatform' });
    expect(specs.map((spec) => spec.model)).toEqual(models);
    expect(specs.find((spec) => spec.model === 'amazon.nova-lite-v1:0')!.copyFrom).toBe(
      'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0',
    );
    // The catalog's image model has ended: the default list, and so the deployment, has no profile for it.
    expect(specs.filter((spec) => spec.model.includes('nova-canvas'))).toEqual([]);
    expect(specs.find((spec) => spec.model === 'us.anthropic.claude-haiku-4-5-20251001-v1:0')!.copyFrom).toBe(
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0',
    );
    expect(profileSourceArn('global.anthropic.claude-haiku-4-5-20251001-v1:0', where)).toBe(
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0',
    );
  });

  it('names each within CloudFormation’s 64 characters and pattern (no `.` or `:`), unique per deployment and model', () => {
    // AWS::Bedrock::ApplicationInferenceProfile: InferenceProfileName `^([0-9a-zA-Z][ _-]?)+$`, 1-64; Description
    // `^([0-9a-zA-Z:.][ _-]?)+$`, 1-200 (test/local/bedrock-inference-profiles.test.ts holds them to the schema itself).
    const name = /^([0-9a-zA-Z][ _-]?)+$/;
    const description = /^([0-9a-zA-Z:.][ _-]?)+$/;
    const seen = new Set<string>();
    for (const deployment of [
      'WorkflowIngestPlatform',
      'A-very-long-stack-name-for-a-staging-copy-of-the-platform-in-us-east-1',
      'x',
      'odd--name-',
      '---',
    ]) {
      const specs = applicationInferenceProfiles(
        ['global.anthropic.claude-haiku-4-5-20251001-v1:0', 'amazon.nova-lite-v1:0', 'us.amazon.nova-lite-v1:0'],
        { ...where, deployment },
      );
      for (const spec of specs) {
        expect(spec.name.length, spec.name).toBeLessThanOrEqual(64);
        expect(spec.name, spec.name).toMatch(name);
        expect(spec.description.length).toBeLessThanOrEqual(200);
        expect(spec.description, spec.description).toMatch(description);
        expect(seen.has(spec.name), spec.name).toBe(false);
        seen.add(spec.name);
      }
    }
    const [prod] = applicationInferenceProfiles(['amazon.nova-lite-v1:0'], { ...where, deployment: 'Prod' });
    expect(prod!.name).toMatch(/^Prod-amazon-nova-lite-v1-0-[0-9a-f]{8}$/);
    expect(prod!.description).toBe('Prod workflow engine calls to amazon.nova-lite-v1:0 tagged for cost allocation');
  });

  it('keeps a profile’s name as long as the profile can stay, and gives a new one exactly when it must be replaced', () => {
    const once = applicationInferenceProfiles(['amazon.nova-lite-v1:0', 'us.amazon.nova-lite-v1:0'], { ...where, deployment: 'Prod' });
    // Synthesized again (another day, another machine): the same names, so CloudFormation changes nothing.
    expect(applicationInferenceProfiles(['amazon.nova-lite-v1:0', 'us.amazon.nova-lite-v1:0'], { ...where, deployment: 'Prod' })).toEqual(
      once,
    );
    // Name, description and source are create-only: the foundation model and its profile copy different sources and
    // must not share a name, and a deployment of another name (another description) gets names of its own, so a
    // replacement is created under a new name before the old profile is deleted.
    expect(once[0]!.name).not.toBe(once[1]!.name);
    const renamed = applicationInferenceProfiles(['amazon.nova-lite-v1:0'], { ...where, deployment: 'Prod2' });
    expect(renamed[0]!.name).not.toBe(once[0]!.name);
    const long = 'A-very-long-stack-name-for-a-staging-copy-of-the-platform-in-us-east-1';
    const [first] = applicationInferenceProfiles(['global.anthropic.claude-haiku-4-5-20251001-v1:0'], { ...where, deployment: long });
    const [second] = applicationInferenceProfiles(['global.anthropic.claude-haiku-4-5-20251001-v1:0'], {
      ...where,
      deployment: `${long}-b`,
    });
    expect(first!.name).not.toBe(second!.name);
  });
});
