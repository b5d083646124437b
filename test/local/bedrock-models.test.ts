import {
  AccessDeniedException,
  ConverseStreamCommand,
  InvokeModelCommand,
  ResourceNotFoundException,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBedrockClient } from '#shared/clients/bedrock.ts';
import { defaultBedrockModels } from '#lib/cdk/bedrock-models.ts';

const DEFAULT_BEDROCK_MODELS = defaultBedrockModels('us-east-1');
import { startBedrockStandIn, type BedrockStandIn } from '#lib/twin/bedrock-stand-in.ts';
import { startFrontDoor, type AccessDenial } from '#lib/twin/iam/front-door.ts';
import { functionPolicy } from '#lib/twin/iam/function-policy.ts';

/**
 * What Bedrock refuses about the model a call names, through the real SDK: the stand-in must refuse it too, or a
 * workflow that publishes and runs on the twin would fail on its first call on AWS.
 */
const HAIKU_35 = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const HAIKU_45 = 'anthropic.claude-haiku-4-5-20251001-v1:0';
let clock = Date.parse('2026-05-01T00:00:00Z');
let bedrock: BedrockStandIn;
let door: { endpoint: string; close(): Promise<void> };
const denials: AccessDenial[] = [];
const step = (name: string, models: readonly string[]) => ({
  name,
  accessKeyId: name.toUpperCase(),
  secretAccessKey: `${name}-secret`,
  policy: functionPolicy({ id: 'WorkflowStep', tables: {}, invokesBedrock: true }, models),
});
const allowedAll = step('AllowedAll', DEFAULT_BEDROCK_MODELS);
// A hand-written role that may invoke Claude but was given no Marketplace actions.
const noMarketplace = { ...step('NoMarketplace', []), policy: { allows: (action: string) => action.startsWith('bedrock:') } };

beforeAll(async () => {
  bedrock = await startBedrockStandIn({ now: () => clock });
  door = await startFrontDoor({
    service: 'bedrock',
    upstream: bedrock.endpoint,
    port: 0,
    principals: [allowedAll, noMarketplace],
    onDenied: (denial) => denials.push(denial),
  });
});
afterAll(async () => {
  await door?.close();
  await bedrock?.close();
});

const direct = () =>
  createBedrockClient({
    endpoint: bedrock.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts: 1,
  });
const converse = (modelId: string, extra: object = {}, client = direct()) =>
  client.send(new ConverseStreamCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'hi' }] }], ...extra }));
const refusal = (sent: Promise<unknown>) =>
  sent.then(
    () => undefined,
    (error: Error & { $metadata?: { httpStatusCode?: number } }) => error,
  );

describe("the Bedrock stand-in's models", () => {
  it('answers an unknown model id as Bedrock does: ValidationException, 400', async () => {
    const error = await refusal(converse('amazon.titan-text-express-v1'));
    expect(error).toBeInstanceOf(ValidationException);
    expect(error!.message).toBe('The provided model identifier is invalid.');
    expect(error!.$metadata!.httpStatusCode).toBe(400);
  });

  it('serves a Legacy model until its end of life, then answers ResourceNotFoundException', async () => {
    clock = Date.parse('2026-06-18T12:00:00Z');
    await expect(converse(HAIKU_35)).resolves.toBeDefined();
    await expect(converse(`us.${HAIKU_35}`)).resolves.toBeDefined();
    clock = Date.parse('2026-06-19T00:00:00Z');
    const ended = await refusal(converse(HAIKU_35));
    expect(ended).toBeInstanceOf(ResourceNotFoundException);
    expect(ended!.message).toMatch(/reached the end of its life/);
    expect(await refusal(converse(`us.${HAIKU_35}`))).toBeInstanceOf(ResourceNotFoundException);
  });

  it('refuses on-demand calls to a model Bedrock serves only through an inference profile', async () => {
    const error = await refusal(converse(HAIKU_45));
    expect(error).toBeInstanceOf(ValidationException);
    expect(error!.message).toMatch(
      /with on-demand throughput isn.t supported. Retry your request with the ID or ARN of an inference profile/,
    );
    await expect(converse(`us.${HAIKU_45}`)).resolves.toBeDefined();
  });

  it('refuses Converse on an image model and InvokeModel images from a text model', async () => {
    clock = Date.parse('2026-09-29T12:00:00Z');
    expect(await refusal(converse('amazon.nova-canvas-v1:0'))).toBeInstanceOf(ValidationException);
    const image = direct().send(
      new InvokeModelCommand({
        modelId: 'amazon.nova-lite-v1:0',
        body: JSON.stringify({ taskType: 'TEXT_IMAGE', textToImageParams: { text: 'a cat' } }),
      }),
    );
    expect(await refusal(image)).toBeInstanceOf(ValidationException);
  });

  it('answers Nova Canvas from its end of life with ResourceNotFoundException, as the other ended model, and draws no image', async () => {
    const draw = () =>
      direct().send(
        new InvokeModelCommand({
          modelId: 'amazon.nova-canvas-v1:0',
          body: JSON.stringify({ taskType: 'TEXT_IMAGE', textToImageParams: { text: 'a cat' } }),
        }),
      );
    bedrock.reset();
    // Before it, the stand-in holds no image request rules: it refuses rather than draw what it cannot check.
    clock = Date.parse('2026-09-29T23:59:59Z');
    expect((await refusal(draw()))!.message).toBe('The stand-in has no request rules for InvokeModel on amazon.nova-canvas-v1:0');
    clock = Date.parse('2026-09-30T00:00:00Z');
    for (const sent of [draw(), converse('amazon.nova-canvas-v1:0')]) {
      const ended = await refusal(sent);
      expect(ended).toBeInstanceOf(ResourceNotFoundException);
      expect(ended!.message).toBe(
        'This model version has reached the end of its life. Please refer to the AWS documentation for more details.',
      );
      expect(ended!.$metadata!.httpStatusCode).toBe(404);
    }
    expect(bedrock.requests).toEqual([]);
  });

  it("refuses a tool name over Converse's 64 characters, as a long hand-off would make", async () => {
    const tools = (name: string) => ({ toolConfig: { tools: [{ toolSpec: { name, inputSchema: { json: { type: 'object' } } } }] } });
    await expect(converse('amazon.nova-lite-v1:0', tools(`transfer_to_${'n'.repeat(52)}`))).resolves.toBeDefined();
    const error = await refusal(converse('amazon.nova-lite-v1:0', tools(`transfer_to_${'n'.repeat(53)}`)));
    expect(error).toBeInstanceOf(ValidationException);
    expect(error!.message).toMatch(/must match \[a-zA-Z0-9_-\]\{1,64\}/);
  });
});

describe('a third-party model behind the IAM front door', () => {
  const through = (who: { accessKeyId: string; secretAccessKey: string }) =>
    createBedrockClient({
      endpoint: door.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: who.accessKeyId, secretAccessKey: who.secretAccessKey },
      maxAttempts: 1,
    });

  it("needs the role to subscribe the account to the model's Marketplace product, as the first call on a fresh account does", async () => {
    denials.length = 0;
    await expect(converse(`us.${HAIKU_45}`, {}, through(allowedAll))).resolves.toBeDefined();
    await expect(converse('us.amazon.nova-lite-v1:0', {}, through(noMarketplace))).resolves.toBeDefined();
    const refused = await refusal(converse(`us.${HAIKU_45}`, {}, through(noMarketplace)));
    expect(refused).toBeInstanceOf(AccessDeniedException);
    expect(denials).toEqual([
      expect.objectContaining({
        principal: 'NoMarketplace',
        action: 'aws-marketplace:Subscribe',
        resource: 'aws-marketplace:product/prod-xdkflymybwmvi',
      }),
    ]);
  });
});
