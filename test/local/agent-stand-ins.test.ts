import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConverseStreamCommand,
  InvokeModelCommand,
  ResourceNotFoundException,
  ThrottlingException,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { GetParameterCommand, GetParametersCommand, ParameterNotFound, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBedrockClient } from '#shared/clients/bedrock.ts';
import { startBedrockStandIn, type BedrockStandIn } from '#lib/twin/bedrock-stand-in.ts';
import { startFrontDoor, type AccessDenial } from '#lib/twin/iam/front-door.ts';
import { functionPolicy } from '#lib/twin/iam/function-policy.ts';
import { startSsmStandIn } from '#lib/twin/ssm-stand-in.ts';
import { LOCAL_BUCKET, LOCAL_CREDENTIALS, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';

/**
 * The twin's stand-ins for agents (Bedrock Runtime, SSM Parameter Store) and presigned S3 URLs, through the real SDK
 * clients: they must refuse what AWS refuses, or a green test would prove nothing.
 */
const credentials = { accessKeyId: 'a', secretAccessKey: 'b' };
const step = {
  name: 'WorkflowStep',
  accessKeyId: 'STEP',
  secretAccessKey: 'step-secret',
  policy: functionPolicy({ id: 'WorkflowStep', tables: {}, readsSecrets: true, buckets: { bodies: { 'executions/': 'readWrite' } } }),
};
const other = { name: 'Other', accessKeyId: 'OTHER', secretAccessKey: 'other-secret', policy: functionPolicy({ id: 'Other', tables: {} }) };
const operator = { name: 'Operator', ...LOCAL_CREDENTIALS, policy: { allows: () => true } };
let dataDir: string;
let bedrock: BedrockStandIn;
let ssm: Awaited<ReturnType<typeof startSsmStandIn>>;
let stores: LocalStores;
const doors: { close(): Promise<void> }[] = [];
const denials: AccessDenial[] = [];
let ssmDoor: string;
let s3Door: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'stand-ins-'));
  bedrock = await startBedrockStandIn();
  ssm = await startSsmStandIn({ dataDir });
  stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
  const door = async (service: 'ssm' | 's3', upstream: string) => {
    const started = await startFrontDoor({
      service,
      upstream,
      port: 0,
      principals: [operator, step, other],
      onDenied: (denial) => denials.push(denial),
    });
    doors.push(started);
    return started.endpoint;
  };
  ssmDoor = await door('ssm', ssm.endpoint);
  s3Door = await door('s3', stores.s3Endpoint);
});
afterAll(async () => {
  await Promise.all(doors.map((door) => door.close()));
  await Promise.all([bedrock?.close(), ssm?.close(), stores?.close()]);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the Bedrock Runtime stand-in', () => {
  // One attempt: the SDK retries throttling by itself, which would take the next scripted turn.
  const client = () => createBedrockClient({ endpoint: bedrock.endpoint, region: 'us-east-1', credentials, maxAttempts: 1 });
  const converse = (input: Partial<ConstructorParameters<typeof ConverseStreamCommand>[0]>) =>
    client().send(
      new ConverseStreamCommand({ modelId: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: [{ text: 'hi' }] }], ...input }),
    );
  const collect = async (input: Partial<ConstructorParameters<typeof ConverseStreamCommand>[0]>) => {
    const events = [];
    for await (const event of (await converse(input)).stream!) events.push(event);
    return events;
  };

  it('refuses what the Converse API refuses', async () => {
    const toolUse = { toolUse: { toolUseId: 't1', name: 'weather', input: {} } };
    const tools = { tools: [{ toolSpec: { name: 'weather', inputSchema: { json: { type: 'object' } } } }] };
    await expect(converse({ messages: [] })).rejects.toBeInstanceOf(ValidationException);
    await expect(converse({ messages: [{ role: 'assistant', content: [{ text: 'x' }] }] })).rejects.toThrow(/start with a user message/);
    await expect(
      converse({
        messages: [
          { role: 'user', content: [{ text: 'a' }] },
          { role: 'user', content: [{ text: 'b' }] },
        ],
      }),
    ).rejects.toThrow(/alternate/);
    const unanswered = [
      { role: 'user' as const, content: [{ text: 'a' }] },
      { role: 'assistant' as const, content: [toolUse] },
      { role: 'user' as const, content: [{ text: 'b' }] },
    ];
    await expect(converse({ messages: unanswered, toolConfig: tools })).rejects.toThrow(/Expected toolResult blocks .* t1/);
    const answered = [
      ...unanswered.slice(0, 2),
      { role: 'user' as const, content: [{ toolResult: { toolUseId: 't1', content: [{ text: 'ok' }] } }] },
    ];
    await expect(converse({ messages: answered })).rejects.toThrow(/toolConfig field must be defined/);
    expect((await collect({ messages: answered, toolConfig: tools })).at(-2)!.messageStop).toEqual({ stopReason: 'end_turn' });
    await expect(
      converse({ toolConfig: { tools: [{ toolSpec: { name: 'bad name', inputSchema: { json: { type: 'object' } } } }] } }),
    ).rejects.toThrow(/must match/);
    await expect(converse({ inferenceConfig: { maxTokens: 0 } })).rejects.toThrow(/maxTokens/);
  });

  it('cuts at maxTokens, and surfaces scripted HTTP and mid-stream errors as the SDK does', async () => {
    bedrock.scriptConverse('amazon.nova-lite-v1:0', [{ text: ['one two three four five six seven eight'] }]);
    const cut = await collect({ inferenceConfig: { maxTokens: 2 } });
    expect(cut.flatMap((event) => (event.contentBlockDelta?.delta?.text ? [event.contentBlockDelta.delta.text] : [])).join('')).toBe(
      'one two ',
    );
    expect(cut.find((event) => event.messageStop)!.messageStop!.stopReason).toBe('max_tokens');
    bedrock.scriptConverse('amazon.nova-lite-v1:0', [
      { httpError: { status: 429, type: 'ThrottlingException', message: 'Too many requests' } },
    ]);
    await expect(converse({})).rejects.toBeInstanceOf(ThrottlingException);
    bedrock.scriptConverse('amazon.nova-lite-v1:0', [
      { text: ['a', 'b'], streamError: { type: 'throttlingException', message: 'slow down', afterEvents: 2 } },
    ]);
    await expect(collect({})).rejects.toBeInstanceOf(ThrottlingException);
  });

  it('draws no Nova Canvas image past its end of life (2026-09-30): ResourceNotFoundException, whatever the request', async () => {
    const invoke = (config: object) =>
      client().send(
        new InvokeModelCommand({
          modelId: 'amazon.nova-canvas-v1:0',
          body: JSON.stringify({ taskType: 'TEXT_IMAGE', textToImageParams: { text: 'a cat' }, imageGenerationConfig: config }),
        }),
      );
    bedrock.reset();
    for (const config of [
      { width: 320, height: 640, seed: 1 },
      { width: 300, height: 320 },
    ]) {
      await expect(invoke(config), JSON.stringify(config)).rejects.toBeInstanceOf(ResourceNotFoundException);
    }
    expect(bedrock.requests).toEqual([]);
  });
});

describe('the SSM Parameter Store stand-in behind its front door', () => {
  const client = (who: { accessKeyId: string; secretAccessKey: string }) =>
    new SSMClient({
      endpoint: ssmDoor,
      region: 'us-east-1',
      credentials: { accessKeyId: who.accessKeyId, secretAccessKey: who.secretAccessKey },
    });

  it('keeps SecureStrings in a file only its owner reads, and answers ciphertext without decryption', async () => {
    await client(operator).send(new PutParameterCommand({ Name: '/local/secrets/p/KEY', Value: 'v1', Type: 'SecureString' }));
    await expect(
      client(operator).send(new PutParameterCommand({ Name: '/local/secrets/p/KEY', Value: 'v2', Type: 'SecureString' })),
    ).rejects.toThrow(/already exists/);
    expect((statSync(join(dataDir, 'ssm', 'parameters.json')).mode & 0o777).toString(8)).toBe('600');
    const plain = await client(step).send(new GetParameterCommand({ Name: '/local/secrets/p/KEY', WithDecryption: true }));
    expect(plain.Parameter).toMatchObject({ Value: 'v1', Version: 1, Type: 'SecureString' });
    const sealed = await client(step).send(new GetParameterCommand({ Name: '/local/secrets/p/KEY' }));
    expect(sealed.Parameter!.Value).not.toBe('v1');
    const many = await client(step).send(
      new GetParametersCommand({ Names: ['/local/secrets/p/KEY', '/local/secrets/p/NONE'], WithDecryption: true }),
    );
    expect([many.Parameters!.map((parameter) => parameter.Value), many.InvalidParameters]).toEqual([['v1'], ['/local/secrets/p/NONE']]);
    await expect(client(step).send(new GetParameterCommand({ Name: '/local/secrets/p/NONE' }))).rejects.toBeInstanceOf(ParameterNotFound);
    await expect(
      client(operator).send(new PutParameterCommand({ Name: '/local/secrets/p/BIG', Value: 'x'.repeat(4097), Type: 'SecureString' })),
    ).rejects.toThrow(/4096/);
    await expect(client(operator).send(new PutParameterCommand({ Name: 'no/leading/slash', Value: 'x', Type: 'String' }))).rejects.toThrow(
      /fully qualified/,
    );
  });

  it('lets a function read only under the secrets prefix, and write nothing', async () => {
    await client(operator).send(new PutParameterCommand({ Name: '/elsewhere/KEY', Value: 'x', Type: 'SecureString', Overwrite: true }));
    await expect(client(step).send(new GetParameterCommand({ Name: '/elsewhere/KEY', WithDecryption: true }))).rejects.toThrow(
      /not authorized to perform: ssm:GetParameter/,
    );
    await expect(client(step).send(new GetParametersCommand({ Names: ['/local/secrets/p/KEY', '/elsewhere/KEY'] }))).rejects.toThrow(
      /parameter\/elsewhere\/KEY/,
    );
    await expect(
      client(step).send(new PutParameterCommand({ Name: '/local/secrets/p/KEY', Value: 'y', Type: 'SecureString', Overwrite: true })),
    ).rejects.toThrow(/ssm:PutParameter/);
    await expect(client(other).send(new GetParameterCommand({ Name: '/local/secrets/p/KEY' }))).rejects.toThrow(/not authorized/);
  });
});

describe('presigned S3 URLs through the front door', () => {
  const s3 = (who: { accessKeyId: string; secretAccessKey: string }) =>
    new S3Client({
      endpoint: s3Door,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: who.accessKeyId, secretAccessKey: who.secretAccessKey },
    });

  it('serves a valid URL, and refuses it tampered, expired, too long-lived or signed by someone without the grant', async () => {
    await s3(step).send(new PutObjectCommand({ Bucket: LOCAL_BUCKET, Key: 'executions/x/images/a.png', Body: 'png-bytes' }));
    const get = new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: 'executions/x/images/a.png' });
    const url = await getSignedUrl(s3(step), get, { expiresIn: 3600 });
    expect(await (await fetch(url)).text()).toBe('png-bytes');
    const tampered = await fetch(url.replace('a.png', 'b.png'));
    expect([tampered.status, await tampered.text()]).toEqual([403, expect.stringContaining('SignatureDoesNotMatch')]);
    const expired = await fetch(await getSignedUrl(s3(step), get, { expiresIn: 1, signingDate: new Date(Date.now() - 10_000) }));
    expect([expired.status, await expired.text()]).toEqual([403, expect.stringContaining('Request has expired')]);
    const tooLong = await fetch(
      (await getSignedUrl(s3(step), get, { expiresIn: 3600 })).replace('X-Amz-Expires=3600', 'X-Amz-Expires=604801'),
    );
    expect(tooLong.status).toBeGreaterThanOrEqual(400);
    const denied = await fetch(await getSignedUrl(s3(other), get, { expiresIn: 60 }));
    expect([denied.status, await denied.text()]).toEqual([403, expect.stringContaining('AccessDenied')]);
  });
});
