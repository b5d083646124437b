import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessDeniedException, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBedrockClient } from '#shared/clients/bedrock.ts';
import { localApplicationProfile } from '#lib/twin/bedrock-profiles.ts';
import { startLocalTwin } from '#lib/twin/twin.ts';
import { createKey, pollExecution, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * An execution on the twin calls Bedrock the way it does on AWS: the step function's worker gets the deployment's profile
 * map in its environment, sends each model's application inference profile ARN, and the execution's usage keeps the model id.
 */
const PROJECT = 'profiles';
let twin: TestTwin;

const workflow = {
  id: 'profiled',
  name: 'Profiled',
  start: 'front',
  nodes: {
    front: { type: 'agent', provider: 'bedrock', model_id: 'us.amazon.nova-lite-v1:0', instructions: 'Answer.', next: 'check' },
    check: { type: 'llm', provider: 'bedrock', model_id: 'amazon.nova-pro-v1:0', prompt: 'Check: {{nodes.front.output}}', next: 'done' },
    done: { type: 'end', output: '{{nodes.front.output}}' },
  },
};
// A model the product supports, which this deployment's list leaves out: it has no profile here.
const unlisted = {
  id: 'unlisted',
  name: 'Unlisted',
  start: 'ask',
  nodes: {
    ask: { type: 'llm', provider: 'bedrock', model_id: 'amazon.nova-micro-v1:0', prompt: '{{input.message}}', next: 'done' },
    done: { type: 'end', output: '{{nodes.ask.output}}' },
  },
};

beforeAll(async () => {
  // A cross-region profile and a foundation model in the twin's region: the two things a profile copies.
  twin = await startTestTwin({ bedrockModels: ['us.amazon.nova-lite-v1:0', 'amazon.nova-pro-v1:0'] });
  const dir = mkdtempSync(join(tmpdir(), 'profiles-'));
  writeFileSync(join(dir, 'w.json'), JSON.stringify(workflow));
  writeFileSync(join(dir, 'unlisted.json'), JSON.stringify(unlisted));
  await twin.admin('publish', dir, '--project', PROJECT);
});
afterAll(() => twin?.close());

describe('Bedrock calls of an execution on the twin', () => {
  it('go through the application inference profile of each model, which the execution still counts by model id', async () => {
    const client = publishedClient(twin, (await createKey(twin, 'full', { project: PROJECT })).key);
    twin.bedrock.reset();
    twin.bedrock.scriptConverse('us.amazon.nova-lite-v1:0', [{ text: ['Hi'], usage: { inputTokens: 4, outputTokens: 1 } }]);
    twin.bedrock.scriptConverse('amazon.nova-pro-v1:0', [{ text: ['Fine'], usage: { inputTokens: 6, outputTokens: 1 } }]);
    const started = await client.execute('profiled', { user_id: 'u', input: { message: 'hi' } });
    expect(started.status, started.text).toBeLessThan(300);
    const done = await pollExecution(
      client,
      started.body.execution_id,
      (body) => body.status !== 'queued' && body.status !== 'running',
      60_000,
    );
    expect(done).toMatchObject({
      status: 'completed',
      output: 'Hi',
      usage: { model_calls: 2, input_tokens: 10, output_tokens: 2, images: 0 },
    });

    const calls = twin.bedrock.requests.map((request) => ({
      operation: request.operation,
      modelId: request.modelId,
      profile: localApplicationProfile(request.invokedAs),
    }));
    expect(calls).toEqual([
      {
        operation: 'ConverseStream',
        modelId: 'us.amazon.nova-lite-v1:0',
        profile: expect.objectContaining({
          model: 'us.amazon.nova-lite-v1:0',
          name: expect.stringMatching(/^local-us-amazon-nova-lite-v1-0-[0-9a-f]{8}$/) as unknown,
        }),
      },
      {
        operation: 'ConverseStream',
        modelId: 'amazon.nova-pro-v1:0',
        profile: expect.objectContaining({
          model: 'amazon.nova-pro-v1:0',
          name: expect.stringMatching(/^local-amazon-nova-pro-v1-0-[0-9a-f]{8}$/) as unknown,
          copyFrom: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0',
        }),
      },
    ]);
    expect(twin.accessDenials).toEqual([]);
  });
});

describe('the step function on the twin', () => {
  it('may not call a model directly, untagged, with its own credentials: only through its deployment’s profile', async () => {
    const asStep = createBedrockClient({
      endpoint: twin.operatorEnvironment.AWS_ENDPOINT_URL_BEDROCK_RUNTIME,
      region: 'us-east-1',
      credentials: twin.credentialsOf('WorkflowStep'),
      maxAttempts: 1,
    });
    const converse = (modelId: string) =>
      asStep.send(new ConverseStreamCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
    twin.bedrock.reset();
    const denialsBefore = twin.accessDenials.length;
    const refused = await converse('us.amazon.nova-lite-v1:0').then(
      () => undefined,
      (error: Error) => error,
    );
    expect(refused).toBeInstanceOf(AccessDeniedException);
    const resource = 'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-lite-v1:0';
    expect(refused!.message).toBe(
      `User: arn:aws:sts::000000000000:assumed-role/WorkflowStep/WorkflowStep is not authorized to perform: bedrock:InvokeModelWithResponseStream on resource: ${resource} because no identity-based policy allows the bedrock:InvokeModelWithResponseStream action`,
    );
    expect(twin.accessDenials.slice(denialsBefore)).toEqual([
      { principal: 'WorkflowStep', action: 'bedrock:InvokeModelWithResponseStream', resource },
    ]);

    const profile = twin.inferenceProfiles.get('us.amazon.nova-lite-v1:0')!;
    await expect(converse(profile)).resolves.toBeDefined();
    expect(twin.bedrock.requests.map((request) => request.invokedAs)).toEqual([profile]);
    asStep.destroy();
  });

  it('fails an execution whose node names a model without a profile here, naming the model, and calls nothing', async () => {
    const client = publishedClient(twin, (await createKey(twin, 'full', { project: PROJECT })).key);
    twin.bedrock.reset();
    const denialsBefore = twin.accessDenials.length;
    const started = await client.execute('unlisted', { user_id: 'u', input: { message: 'hi' } });
    expect(started.status, started.text).toBeLessThan(300);
    const done = await pollExecution(
      client,
      started.body.execution_id,
      (body) => body.status !== 'queued' && body.status !== 'running',
      60_000,
    );
    expect(done).toMatchObject({
      status: 'failed',
      error:
        "Bedrock model amazon.nova-micro-v1:0 is not one this deployment allows: it has no application inference profile (add it to the deployment's bedrockModels)",
    });
    expect(twin.bedrock.requests).toEqual([]);
    expect(twin.accessDenials.slice(denialsBefore)).toEqual([]);
  });
});

describe('the twin’s Bedrock list', () => {
  it('is held to the rules synth holds bedrockModels to: a model past its end of life starts no twin', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ended-list-'));
    try {
      await expect(
        startLocalTwin({ dataDir, host: '127.0.0.1', port: 0, bedrockModels: ['us.amazon.nova-lite-v1:0', 'amazon.nova-canvas-v1:0'] }),
      ).rejects.toThrow('CDK context bedrockModels: amazon.nova-canvas-v1:0 reached end of life on Bedrock on 2026-09-30');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
