import {
  AccessDeniedException,
  ConverseStreamCommand,
  InvokeModelCommand,
  ResourceNotFoundException,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBedrockClient } from '#shared/clients/bedrock.ts';
import { INFERENCE_PROFILES_ENV } from '#engine/inference-profiles.ts';
import { emptyUsage } from '#executions/execution-usage.ts';
import { startBedrockStandIn, type BedrockStandIn } from '#lib/twin/bedrock-stand-in.ts';
import { createLocalInferenceProfiles, createLocalProfile, localApplicationProfile } from '#lib/twin/bedrock-profiles.ts';
import { schemaRefusals } from '#lib/twin/cloudformation-schemas.ts';
import { applicationInferenceProfiles, defaultBedrockModels } from '#lib/cdk/bedrock-models.ts';
import { BEDROCK_CATALOG, catalogIds } from '#shared/bedrock-catalog.ts';
import { startFrontDoor, type AccessDenial } from '#lib/twin/iam/front-door.ts';
import { functionPolicy } from '#lib/twin/iam/function-policy.ts';
import { bedrockPermissions } from '#lib/twin/iam/required-permissions.ts';
import { functionEnvironment } from '#lib/twin/lambda/function-environment.ts';

/**
 * The step function calls Bedrock through the deployment's application inference profiles: the twin creates them at
 * start-up from the allow-list, as CloudFormation does, and its Bedrock stand-in and IAM front door answer a profile
 * ARN only as Bedrock and IAM would: a profile the twin created reaches its model under every rule of that model,
 * any other ARN is refused.
 */
const MODELS = ['amazon.nova-lite-v1:0', 'us.amazon.nova-pro-v1:0', 'us.anthropic.claude-haiku-4-5-20251001-v1:0'];
const OTHER_ACCOUNT_PROFILE = 'arn:aws:bedrock:us-east-1:111122223333:application-inference-profile/a1b2c3d4e5f6';
const NEVER_CREATED = 'arn:aws:bedrock:us-east-1:000000000000:application-inference-profile/zzzzzzzzzzzz';
let bedrock: BedrockStandIn;
let door: { endpoint: string; close(): Promise<void> };
let created: ReturnType<typeof createLocalInferenceProfiles>;
const denials: AccessDenial[] = [];
const profileOf = (model: string) => created.profiles.get(model)!;
const principal = (name: string, policy: ReturnType<typeof functionPolicy>) => ({
  name,
  accessKeyId: name.toUpperCase(),
  secretAccessKey: `${name}-secret`,
  policy,
});
const operator = principal('Operator', { allows: () => true });
let step: ReturnType<typeof principal>;
// A role granted the profiles themselves but nothing of what they copy: Bedrock authorizes the model behind too.
let profilesOnly: ReturnType<typeof principal>;

beforeAll(async () => {
  created = createLocalInferenceProfiles(MODELS);
  step = principal('WorkflowStep', functionPolicy({ id: 'WorkflowStep', tables: {}, invokesBedrock: true }, MODELS, created.profiles));
  const arns = new Set(created.profiles.values());
  profilesOnly = principal('ProfilesOnly', { allows: (action, resource) => arns.has(resource) || action.startsWith('aws-marketplace:') });
  bedrock = await startBedrockStandIn();
  door = await startFrontDoor({
    service: 'bedrock',
    upstream: bedrock.endpoint,
    port: 0,
    principals: [operator, step, profilesOnly],
    onDenied: (denial) => denials.push(denial),
  });
});
afterAll(async () => {
  created?.remove();
  await door?.close();
  await bedrock?.close();
});
beforeEach(() => {
  bedrock.reset();
  denials.length = 0;
});

const through = (who: { accessKeyId: string; secretAccessKey: string }) =>
  createBedrockClient({
    endpoint: door.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: who.accessKeyId, secretAccessKey: who.secretAccessKey },
    maxAttempts: 1,
  });
const converse = (modelId: string, who = step) =>
  through(who).send(new ConverseStreamCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
const refusal = (sent: Promise<unknown>) =>
  sent.then(
    () => undefined,
    (error: Error & { $metadata?: { httpStatusCode?: number } }) => error,
  );

describe('the twin’s application inference profiles', () => {
  it('are one per allowed model, each an application inference profile ARN of the local account, copying that model', () => {
    expect([...created.profiles.keys()]).toEqual(MODELS);
    for (const [model, arn] of created.profiles) {
      expect(arn).toMatch(/^arn:aws:bedrock:us-east-1:000000000000:application-inference-profile\/[a-z0-9]{12}$/);
      expect(localApplicationProfile(arn)).toMatchObject({
        model,
        name: expect.stringMatching(new RegExp(`^local-${model.replace(/[^0-9a-z]+/gi, '-')}-[0-9a-f]{8}$`)) as unknown,
      });
    }
    expect(new Set(created.profiles.values()).size).toBe(MODELS.length);
  });

  it('reach their model: the stand-in answers as that model, scripted by its id, and records the ARN the call named', async () => {
    bedrock.scriptConverse('us.amazon.nova-pro-v1:0', [{ text: ['through ', 'the profile'] }]);
    const response = await converse(profileOf('us.amazon.nova-pro-v1:0'));
    let text = '';
    for await (const event of response.stream ?? []) text += event.contentBlockDelta?.delta?.text ?? '';
    expect(text).toBe('through the profile');
    expect(bedrock.requests).toEqual([
      expect.objectContaining({
        operation: 'ConverseStream',
        modelId: 'us.amazon.nova-pro-v1:0',
        invokedAs: profileOf('us.amazon.nova-pro-v1:0'),
      }),
    ]);
  });

  it('keep every rule of their model: requests the model refuses are refused through its profile as Bedrock refuses them', async () => {
    // An image request to a text model's profile: the model lacks the operation.
    const image = await refusal(
      through(step).send(
        new InvokeModelCommand({
          modelId: profileOf('amazon.nova-lite-v1:0'),
          body: JSON.stringify({ taskType: 'TEXT_IMAGE', textToImageParams: { text: 'a cat' } }),
        }),
      ),
    );
    expect(image).toBeInstanceOf(ValidationException);
    expect(image!.message).toMatch(/doesn't support the model/);
    // A Converse request the API refuses (a tool name over 64 characters) through the profile of a cross-region model.
    const tools = { toolConfig: { tools: [{ toolSpec: { name: 'x'.repeat(65), inputSchema: { json: { type: 'object' } } } }] } };
    const converseRule = await refusal(
      through(step).send(
        new ConverseStreamCommand({
          modelId: profileOf('us.amazon.nova-pro-v1:0'),
          messages: [{ role: 'user', content: [{ text: 'hi' }] }],
          ...tools,
        }),
      ),
    );
    expect(converseRule).toBeInstanceOf(ValidationException);
    expect(converseRule!.message).toMatch(/must match/);
    // The end of life: a profile a deployment made before its model ended answers as the ended model does.
    const before = createLocalInferenceProfiles(['amazon.nova-canvas-v1:0', 'us.anthropic.claude-3-5-haiku-20241022-v1:0']);
    try {
      const canvas = before.profiles.get('amazon.nova-canvas-v1:0')!;
      const drawn = await refusal(
        through(operator).send(
          new InvokeModelCommand({
            modelId: canvas,
            body: JSON.stringify({ taskType: 'TEXT_IMAGE', textToImageParams: { text: 'a cat' } }),
          }),
        ),
      );
      expect(drawn).toBeInstanceOf(ResourceNotFoundException);
      expect(await refusal(converse(before.profiles.get('us.anthropic.claude-3-5-haiku-20241022-v1:0')!, operator))).toBeInstanceOf(
        ResourceNotFoundException,
      );
    } finally {
      before.remove();
    }
    // Only the Converse request got past the model's checks, to be refused by the API's.
    expect(bedrock.requests.map((request) => request.modelId)).toEqual(['us.amazon.nova-pro-v1:0']);
  });

  it('need the profile, GetInferenceProfile on it, and what it copies, as IAM asks on AWS', async () => {
    const arn = profileOf('us.anthropic.claude-haiku-4-5-20251001-v1:0');
    const needs = bedrockPermissions({
      method: 'POST',
      url: `/model/${encodeURIComponent(arn)}/converse-stream`,
      target: '',
      body: Buffer.alloc(0),
    });
    // Every check of the request sees the profile it names in its context, as bedrock:InferenceProfileArn.
    const context = { 'bedrock:InferenceProfileArn': arn };
    expect(needs.slice(0, 4)).toEqual([
      { action: 'bedrock:InvokeModelWithResponseStream', resource: arn, context },
      { action: 'bedrock:GetInferenceProfile', resource: arn, context },
      {
        action: 'bedrock:InvokeModelWithResponseStream',
        resource: 'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0',
        context,
      },
      {
        action: 'bedrock:InvokeModelWithResponseStream',
        resource: 'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0',
        context,
      },
    ]);
    // The Marketplace checks are Bedrock's own calls on the role's behalf (aws:CalledViaLast), not the profile's.
    expect(needs).toContainEqual(
      expect.objectContaining({
        action: 'aws-marketplace:Subscribe',
        resource: 'aws-marketplace:product/prod-xdkflymybwmvi',
        context: { 'aws:CalledViaLast': 'bedrock.amazonaws.com', 'aws-marketplace:ProductId': 'prod-xdkflymybwmvi' },
      }),
    );
    await expect(converse(arn)).resolves.toBeDefined();

    const refused = await refusal(converse(profileOf('amazon.nova-lite-v1:0'), profilesOnly));
    expect(refused).toBeInstanceOf(AccessDeniedException);
    expect(denials).toEqual([
      {
        principal: 'ProfilesOnly',
        action: 'bedrock:InvokeModelWithResponseStream',
        resource: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0',
      },
    ]);
    expect(bedrock.requests.map((request) => request.invokedAs)).toEqual([arn]);
  });
});

describe('what the profiles copy', () => {
  const denial = (action: string, resource: string) =>
    `User: arn:aws:sts::000000000000:assumed-role/WorkflowStep/WorkflowStep is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`;

  it('is refused to the step function called directly, with no profile in the request: the call would carry no tag', async () => {
    const direct = [
      ['amazon.nova-lite-v1:0', 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0'],
      [
        'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0',
        'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0',
      ],
      ['us.amazon.nova-pro-v1:0', 'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-pro-v1:0'],
      [
        'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-pro-v1:0',
        'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-pro-v1:0',
      ],
    ];
    for (const [modelId, resource] of direct) {
      const refused = await refusal(converse(modelId!));
      expect(refused, modelId).toBeInstanceOf(AccessDeniedException);
      expect(refused!.message).toBe(denial('bedrock:InvokeModelWithResponseStream', resource!));
      expect((refused as { $metadata?: { httpStatusCode?: number } }).$metadata!.httpStatusCode).toBe(403);
    }
    // InvokeModel as well as ConverseStream: the condition is on both actions.
    const invoked = await refusal(
      through(step).send(new InvokeModelCommand({ modelId: 'amazon.nova-lite-v1:0', body: JSON.stringify({ inputText: 'hi' }) })),
    );
    expect(invoked).toBeInstanceOf(AccessDeniedException);
    expect(invoked!.message).toBe(denial('bedrock:InvokeModel', 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0'));
    expect(bedrock.requests).toEqual([]);
  });

  it('is reached through one of the deployment’s profiles, and not through another deployment’s profile of the same model', async () => {
    await expect(converse(profileOf('amazon.nova-lite-v1:0'))).resolves.toBeDefined();
    await expect(converse(profileOf('us.amazon.nova-pro-v1:0'))).resolves.toBeDefined();
    const other = createLocalInferenceProfiles(['amazon.nova-lite-v1:0']);
    try {
      const arn = other.profiles.get('amazon.nova-lite-v1:0')!;
      const refused = await refusal(converse(arn));
      expect(refused).toBeInstanceOf(AccessDeniedException);
      expect(refused!.message).toBe(denial('bedrock:InvokeModelWithResponseStream', arn));
    } finally {
      other.remove();
    }
    expect(bedrock.requests.map((request) => request.modelId)).toEqual(['amazon.nova-lite-v1:0', 'us.amazon.nova-pro-v1:0']);
  });

  it('is checked with the profile the call named, in every region it routes to, so a role naming what it copies is refused', () => {
    // AWS: a role that may invoke a profile "must also specify the foundation model in each Region associated with it", and
    // bedrock:InferenceProfileArn holds those models to calls through the profile it names
    // (docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html). Which ARN it carries when an
    // application profile copies a cross-region profile is not documented: the twin carries the one the call named.
    const arn = profileOf('us.amazon.nova-pro-v1:0');
    const needs = bedrockPermissions({
      method: 'POST',
      url: `/model/${encodeURIComponent(arn)}/converse-stream`,
      target: '',
      body: Buffer.alloc(0),
    });
    const copied = needs.filter((needed) => needed.resource !== arn);
    expect(copied).toEqual(
      [
        'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-pro-v1:0',
        'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0',
        'arn:aws:bedrock:us-east-2::foundation-model/amazon.nova-pro-v1:0',
        'arn:aws:bedrock:us-west-2::foundation-model/amazon.nova-pro-v1:0',
      ].map((resource) => ({ action: 'bedrock:InvokeModelWithResponseStream', resource, context: { 'bedrock:InferenceProfileArn': arn } })),
    );
    const allowedBy = (policy: ReturnType<typeof functionPolicy>) =>
      needs.find((needed) => !policy.allows(needed.action, needed.resource, needed.context)) ?? 'allowed';
    expect(allowedBy(step.policy)).toBe('allowed');
    // A role written for the other reading: its condition lists what each profile copies. Every call is refused on what
    // the profile copies, the first of which is the cross-region profile here and the foundation model for a direct copy.
    const copiedArns = [...created.profiles.values()].map((profile) => localApplicationProfile(profile)!.copyFrom);
    const wrong = functionPolicy({ id: 'WorkflowStep', tables: {}, invokesBedrock: true }, MODELS, created.profiles, copiedArns);
    expect(allowedBy(wrong)).toEqual(copied[0]);
    const lite = profileOf('amazon.nova-lite-v1:0');
    const liteNeeds = bedrockPermissions({
      method: 'POST',
      url: `/model/${encodeURIComponent(lite)}/converse-stream`,
      target: '',
      body: Buffer.alloc(0),
    });
    expect(liteNeeds.find((needed) => !wrong.allows(needed.action, needed.resource, needed.context))).toMatchObject({
      resource: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0',
      context: { 'bedrock:InferenceProfileArn': lite },
    });
  });

  it('is what the role grants only on the condition, as CDK writes it: the policy model evaluates it', () => {
    const lite = 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0';
    const action = 'bedrock:InvokeModel';
    expect(step.policy.allows(action, lite)).toBe(false);
    expect(step.policy.allows(action, lite, { 'bedrock:InferenceProfileArn': profileOf('amazon.nova-lite-v1:0') })).toBe(true);
    expect(
      step.policy.allows(action, lite, {
        'bedrock:InferenceProfileArn': 'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-lite-v1:0',
      }),
    ).toBe(false);
    expect(step.policy.allows(action, lite, { 'bedrock:InferenceProfileArn': `${profileOf('amazon.nova-lite-v1:0')}x` })).toBe(false);
    // The profiles themselves carry no condition.
    expect(step.policy.allows(action, profileOf('amazon.nova-lite-v1:0'))).toBe(true);
  });
});

describe('any other ARN', () => {
  it('is refused by IAM for the step function, whose role names only the deployment’s profiles', async () => {
    for (const arn of [OTHER_ACCOUNT_PROFILE, NEVER_CREATED]) {
      const refused = await refusal(converse(arn));
      expect(refused, arn).toBeInstanceOf(AccessDeniedException);
      expect(refused!.message).toBe(
        `User: arn:aws:sts::000000000000:assumed-role/WorkflowStep/WorkflowStep is not authorized to perform: bedrock:InvokeModelWithResponseStream on resource: ${arn} because no identity-based policy allows the bedrock:InvokeModelWithResponseStream action`,
      );
    }
    expect(bedrock.requests).toEqual([]);
  });

  it('is an invalid model identifier to Bedrock itself, for a caller IAM lets through', async () => {
    const invalid = [
      OTHER_ACCOUNT_PROFILE,
      NEVER_CREATED,
      'arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-lite-v1:0',
      'arn:aws:bedrock:us-east-1:111122223333:inference-profile/us.amazon.nova-lite-v1:0',
      'arn:aws:bedrock:us-east-1:000000000000:provisioned-model/abc',
      'arn:aws:s3:::local-bodies/x',
    ];
    for (const arn of invalid) {
      const refused = await refusal(converse(arn, operator));
      expect(refused, arn).toBeInstanceOf(ValidationException);
      expect(refused!.message).toBe('The provided model identifier is invalid.');
      expect(refused!.$metadata!.httpStatusCode).toBe(400);
    }
    // The foundation model's and the system profile's own ARNs in this region and account name the model, as on Bedrock.
    await expect(converse('arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0', operator)).resolves.toBeDefined();
    await expect(
      converse('arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-lite-v1:0', operator),
    ).resolves.toBeDefined();
    expect(bedrock.requests.map((request) => request.modelId)).toEqual(['amazon.nova-lite-v1:0', 'us.amazon.nova-lite-v1:0']);
  });

  it('includes a profile after its deployment is gone', async () => {
    const gone = createLocalInferenceProfiles(['amazon.nova-micro-v1:0']);
    const arn = gone.profiles.get('amazon.nova-micro-v1:0')!;
    await expect(converse(arn, operator)).resolves.toBeDefined();
    gone.remove();
    expect(await refusal(converse(arn, operator))).toBeInstanceOf(ValidationException);
  });
});

describe('the step function on the twin', () => {
  it('gets the map in its environment, as CDK sets it, and calls through it with the product’s own provider', async () => {
    const declaration = { id: 'WorkflowStep', tables: {}, invokesBedrock: true };
    const endpoints = { dynamodb: '', s3: '', stepFunctions: '', ssm: '', bedrock: door.endpoint };
    const environment = functionEnvironment(
      declaration,
      endpoints,
      { accessKeyId: 'x', secretAccessKey: 'y' },
      { handoffEvents: '' },
      created.profiles,
    );
    expect(JSON.parse(environment[INFERENCE_PROFILES_ENV]!)).toEqual(Object.fromEntries(created.profiles));
    expect(
      functionEnvironment(
        { id: 'Other', tables: {} },
        endpoints,
        { accessKeyId: 'x', secretAccessKey: 'y' },
        { handoffEvents: '' },
        created.profiles,
      ),
    ).not.toHaveProperty(INFERENCE_PROFILES_ENV);
    // The step function cannot start without them (step-wiring.ts), so the twin cannot host it without them either.
    expect(() => functionEnvironment(declaration, endpoints, { accessKeyId: 'x', secretAccessKey: 'y' }, { handoffEvents: '' })).toThrow(
      "WorkflowStep invokes Bedrock: its environment needs the deployment's inference profiles",
    );

    vi.resetModules();
    vi.stubEnv(INFERENCE_PROFILES_ENV, environment[INFERENCE_PROFILES_ENV]);
    try {
      const { createBedrockProvider } = await import('#engine/bedrock-provider.ts');
      bedrock.scriptConverse('amazon.nova-lite-v1:0', [{ text: ['hello'], usage: { inputTokens: 3, outputTokens: 1 } }]);
      const usage = emptyUsage();
      const reply = await createBedrockProvider(through(step)).generate({
        node: { type: 'llm', provider: 'bedrock', model_id: 'amazon.nova-lite-v1:0', prompt: 'hi' },
        scope: { input: {}, memory: {}, nodes: {}, approval: null, history: '' },
        onToken: () => Promise.resolve(),
        usage,
        models: {},
      } as never);
      expect(reply).toBe('hello');
      expect(usage).toMatchObject({ model_calls: 1, input_tokens: 3, output_tokens: 1 });
      expect(bedrock.requests).toEqual([
        expect.objectContaining({ modelId: 'amazon.nova-lite-v1:0', invokedAs: profileOf('amazon.nova-lite-v1:0') }),
      ]);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

describe('creating an application inference profile, held to CloudFormation’s own resource schema', () => {
  const source = 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-micro-v1:0';
  const create =
    (name: string, description = 'calls tagged for cost allocation') =>
    () =>
      createLocalProfile({ model: 'amazon.nova-micro-v1:0', name, description, copyFrom: source });

  it('refuses a name with a dot or a colon, as CloudFormation and Bedrock do, naming the property and the pattern', () => {
    // The name the stack once generated: the `:.` of the pattern belong to Description, not to InferenceProfileName.
    expect(create('WorkflowIngestPlatform-amazon.nova-micro-v1:0')).toThrow(
      "1 validation error detected: InferenceProfileName: 'WorkflowIngestPlatform-amazon.nova-micro-v1:0' does not match pattern '^([0-9a-zA-Z][ _-]?)+$'",
    );
    expect(create('WorkflowIngestPlatform-amazon.nova-micro-v1:0')).toThrow(
      expect.objectContaining({ name: 'ValidationException' }) as Error,
    );
    expect(create('two--dashes')).toThrow(/InferenceProfileName: 'two--dashes' does not match pattern/);
    expect(create('x'.repeat(65))).toThrow(/InferenceProfileName: length 65 exceeds maximum 64/);
    expect(create('fine-name', 'no! bangs')).toThrow(
      /Description: 'no! bangs' does not match pattern '\^\(\[0-9a-zA-Z:\.\]\[ _-\]\?\)\+\$'/,
    );
    expect(() =>
      createLocalProfile({ model: 'amazon.nova-micro-v1:0', name: 'fine-name', description: 'ok', copyFrom: 'arn:aws:s3:::bucket' }),
    ).toThrow(/ModelSource/);
  });

  it('creates what the schema takes', () => {
    const arn = create('fine-name-1', 'amazon.nova-micro-v1:0 calls')();
    expect(localApplicationProfile(arn)).toMatchObject({ name: 'fine-name-1', model: 'amazon.nova-micro-v1:0', copyFrom: source });
  });

  it('takes every profile the product would create, for every catalog id, deployment name and region', () => {
    const deployments = [
      'WorkflowIngestPlatform',
      'A-very-long-stack-name-for-a-staging-copy-of-the-platform-in-eu-central-1',
      'x',
      'odd--name-',
    ];
    const regions = ['us-east-1', 'eu-central-1', 'ap-northeast-1'];
    let checked = 0;
    for (const region of regions) {
      const where = { partition: 'aws', region, account: '123456789012' };
      for (const deployment of deployments) {
        for (const spec of applicationInferenceProfiles([...catalogIds(), ...defaultBedrockModels(region)], { ...where, deployment })) {
          const properties = { InferenceProfileName: spec.name, Description: spec.description, ModelSource: { CopyFrom: spec.copyFrom } };
          expect(
            schemaRefusals('AWS::Bedrock::ApplicationInferenceProfile', properties, region),
            `${region} ${deployment} ${spec.model}`,
          ).toEqual([]);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(BEDROCK_CATALOG.length * deployments.length * regions.length);
  });
});
