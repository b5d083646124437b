import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localApplicationProfile } from '#lib/twin/bedrock-profiles.ts';
import { createKey, pollExecution, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/**
 * A run on the twin calls Bedrock the way it does on AWS: the step function's worker gets the deployment's profile
 * map in its environment, sends each model's application inference profile ARN, and the run's usage keeps the model id.
 */
const PROJECT = 'profiles';
let twin: TestTwin;

const workflow = {
  id: 'profiled',
  name: 'Profiled',
  start: 'front',
  nodes: {
    front: { type: 'agent', provider: 'bedrock', model_id: 'us.amazon.nova-lite-v1:0', instructions: 'Answer.', next: 'picture' },
    picture: { type: 'image', provider: 'bedrock', prompt: 'A lighthouse', width: 320, height: 320, next: 'done' },
    done: { type: 'end', output: '{{nodes.front.output}}' },
  },
};

beforeAll(async () => {
  twin = await startTestTwin({ bedrockModels: ['us.amazon.nova-lite-v1:0', 'amazon.nova-canvas-v1:0'] });
  const dir = mkdtempSync(join(tmpdir(), 'profiles-'));
  writeFileSync(join(dir, 'w.json'), JSON.stringify(workflow));
  await twin.admin('publish', dir, '--project', PROJECT);
});
afterAll(() => twin?.close());

describe('Bedrock calls of a run on the twin', () => {
  it('go through the application inference profile of each model, which the run still counts by model id', async () => {
    const client = publishedClient(twin, (await createKey(twin, 'full', { project: PROJECT })).key);
    twin.bedrock.reset();
    twin.bedrock.scriptConverse('us.amazon.nova-lite-v1:0', [{ text: ['Hi'], usage: { inputTokens: 4, outputTokens: 1 } }]);
    const started = await client.execute('profiled', { user_id: 'u', input: { message: 'hi' } });
    expect(started.status, started.text).toBeLessThan(300);
    const done = await pollExecution(client, started.body.execution_id, (body) => body.status !== 'queued' && body.status !== 'running', 60_000);
    expect(done).toMatchObject({ status: 'completed', output: 'Hi', usage: { model_calls: 1, input_tokens: 4, output_tokens: 1, images: 1 } });

    const calls = twin.bedrock.requests.map((request) => ({ operation: request.operation, modelId: request.modelId, profile: localApplicationProfile(request.invokedAs) }));
    expect(calls).toEqual([
      { operation: 'ConverseStream', modelId: 'us.amazon.nova-lite-v1:0', profile: expect.objectContaining({ model: 'us.amazon.nova-lite-v1:0', name: 'local-us.amazon.nova-lite-v1:0' }) },
      { operation: 'InvokeModel', modelId: 'amazon.nova-canvas-v1:0', profile: expect.objectContaining({ model: 'amazon.nova-canvas-v1:0' }) },
    ]);
    expect(twin.accessDenials).toEqual([]);
  });
});
