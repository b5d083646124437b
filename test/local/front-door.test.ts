import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessDeniedException, ConverseStreamCommand, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createBedrockClient } from '#shared/clients/bedrock.ts';
import { defaultBedrockModels } from '#lib/cdk/bedrock-models.ts';

const DEFAULT_BEDROCK_MODELS = defaultBedrockModels('us-east-1');
import { startFrontDoor, type AccessDenial, type LocalPrincipal, type LocalService } from '#lib/twin/iam/front-door.ts';
import { ADMINISTRATOR_POLICY, functionPolicy } from '#lib/twin/iam/function-policy.ts';
import { bedrockPermissions } from '#lib/twin/iam/required-permissions.ts';
import { LOCAL_BUCKET, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';

/**
 * The IAM front door for Bedrock Runtime and for presigned S3 URLs: which action and ARNs each request needs, and
 * that the real clients get AWS's refusals (and streams) through it.
 */
const agent = {
  name: 'WorkflowStep',
  accessKeyId: 'STEP',
  secretAccessKey: 'step-secret',
  policy: functionPolicy({ id: 'WorkflowStep', tables: {}, invokesBedrock: true, buckets: { bodies: { 'executions/': 'readWrite' } } }),
};
const bystander = {
  name: 'Bystander',
  accessKeyId: 'BYSTANDER',
  secretAccessKey: 'bystander-secret',
  policy: functionPolicy({ id: 'Bystander', tables: {} }),
};
const operator = { name: 'Operator', accessKeyId: 'OPERATOR', secretAccessKey: 'operator-secret', policy: ADMINISTRATOR_POLICY };
const principals: LocalPrincipal[] = [agent, bystander, operator];
const keysOf = (who: LocalPrincipal) => ({ accessKeyId: who.accessKeyId, secretAccessKey: who.secretAccessKey });
const denials: AccessDenial[] = [];
const closers: (() => Promise<unknown>)[] = [];
beforeEach(() => void denials.splice(0));
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

async function door(service: LocalService, upstream: string): Promise<string> {
  const started = await startFrontDoor({ service, upstream, port: 0, principals, onDenied: (denial) => denials.push(denial) });
  closers.push(() => started.close());
  return started.endpoint;
}

/** An upstream that records what reached it; `answer` decides the reply. */
async function recordingUpstream(answer: (url: string, response: import('node:http').ServerResponse) => void | Promise<void>) {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const server: Server = createServer((request, response) => {
    seen.push({ url: request.url ?? '', headers: request.headers });
    request.resume();
    request.on('end', () => void answer(request.url ?? '', response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('what a Bedrock Runtime request needs', () => {
  const needs = (url: string) => bedrockPermissions({ method: 'POST', url, target: '', body: Buffer.alloc(0) });
  const model = (id: string) => `arn:aws:bedrock:us-east-1::foundation-model/${id}`;

  it('maps each operation to its action, on the foundation model the URL-encoded id names', () => {
    expect(needs('/model/amazon.nova-lite-v1%3A0/converse')).toEqual([
      { action: 'bedrock:InvokeModel', resource: model('amazon.nova-lite-v1:0') },
    ]);
    expect(needs('/model/amazon.nova-pro-v1%3A0/invoke')).toEqual([
      { action: 'bedrock:InvokeModel', resource: model('amazon.nova-pro-v1:0') },
    ]);
    expect(needs('/model/amazon.nova-lite-v1%3A0/converse-stream')).toEqual([
      { action: 'bedrock:InvokeModelWithResponseStream', resource: model('amazon.nova-lite-v1:0') },
    ]);
    expect(needs('/model/amazon.nova-lite-v1%3A0/invoke-with-response-stream')).toEqual([
      { action: 'bedrock:InvokeModelWithResponseStream', resource: model('amazon.nova-lite-v1:0') },
    ]);
  });

  it('needs an inference profile and its model in every region the profile may route to', () => {
    expect(needs('/model/us.amazon.nova-pro-v1%3A0/converse-stream').map((permission) => permission.resource)).toEqual([
      'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-pro-v1:0',
      'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0',
      'arn:aws:bedrock:us-east-2::foundation-model/amazon.nova-pro-v1:0',
      'arn:aws:bedrock:us-west-2::foundation-model/amazon.nova-pro-v1:0',
    ]);
    for (const geography of ['eu', 'apac', 'global']) {
      const [profile, ...routed] = needs(`/model/${geography}.amazon.nova-lite-v1%3A0/converse`);
      expect(profile!.resource).toBe(`arn:aws:bedrock:us-east-1:000000000000:inference-profile/${geography}.amazon.nova-lite-v1:0`);
      expect(routed.length).toBeGreaterThan(1);
    }
  });

  it('takes an ARN as its own resource, with a profile ARN also needing its routed models', () => {
    const arn = 'arn:aws:bedrock:us-east-1:000000000000:application-inference-profile/abc123';
    const profileArn = 'arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.amazon.nova-lite-v1:0';

    expect(needs(`/model/${encodeURIComponent(arn)}/converse`)).toEqual([{ action: 'bedrock:InvokeModel', resource: arn }]);
    expect(needs(`/model/${encodeURIComponent(profileArn)}/converse`).map((permission) => permission.resource)).toEqual([
      profileArn,
      model('amazon.nova-lite-v1:0'),
      expect.stringContaining('us-east-2'),
      expect.stringContaining('us-west-2'),
    ]);
  });

  it('lets a function that invokes Bedrock use exactly the allowed models, and no one else', () => {
    const allowed = (policy: LocalPrincipal['policy'], id: string) =>
      // With each check's context: a third-party model's Marketplace checks are allowed only as calls Bedrock makes.
      needs(`/model/${encodeURIComponent(id)}/converse-stream`).every(({ action, resource, context }) =>
        policy.allows(action, resource, context),
      );

    for (const id of DEFAULT_BEDROCK_MODELS) expect(allowed(agent.policy, id), id).toBe(true);
    expect(allowed(agent.policy, 'anthropic.claude-3-opus-20240229-v1:0')).toBe(false);
    expect(allowed(agent.policy, 'eu.amazon.nova-lite-v1:0')).toBe(false);
    // Past its end of life, Nova Canvas is in no default list: not even InvokeModel on it is granted.
    expect(needs('/model/amazon.nova-canvas-v1%3A0/invoke').every(({ action, resource }) => agent.policy.allows(action, resource))).toBe(
      false,
    );
    expect(allowed(bystander.policy, 'amazon.nova-lite-v1:0')).toBe(false);
  });
});

describe('Bedrock Runtime through the front door', () => {
  const codec = new EventStreamCodec(
    (bytes) => Buffer.from(bytes).toString('utf8'),
    (text) => new Uint8Array(Buffer.from(text, 'utf8')),
  );
  const event = (type: string, payload: object) =>
    codec.encode({
      headers: {
        ':message-type': { type: 'string', value: 'event' },
        ':event-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
      },
      body: new Uint8Array(Buffer.from(JSON.stringify(payload))),
    });
  const order: string[] = [];
  let clientSawFirstEvent: () => void = () => undefined;
  let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
  let endpoint: string;
  const client = (who: LocalPrincipal) => createBedrockClient({ endpoint, region: 'us-east-1', credentials: keysOf(who), maxAttempts: 1 });

  beforeAll(async () => {
    upstream = await recordingUpstream(async (url, response) => {
      if (!url.endsWith('/converse-stream'))
        return void response.writeHead(200, { 'content-type': 'application/json' }).end('{"output":"ok"}');
      const seen = new Promise<void>((resolve) => {
        clientSawFirstEvent = resolve;
        setTimeout(resolve, 3_000);
      });
      response.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      response.write(event('messageStart', { role: 'assistant' }));
      await seen;
      order.push('upstream sends the rest');
      response.write(event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'hello' } }));
      response.end(event('messageStop', { stopReason: 'end_turn' }));
    });
    endpoint = await door('bedrock', upstream.endpoint);
  });

  it('forwards an allowed call with the model id as the client encoded it', async () => {
    const answer = await client(agent).send(new InvokeModelCommand({ modelId: 'amazon.nova-pro-v1:0', body: '{}' }));
    const byArn = await client(agent).send(
      new InvokeModelCommand({ modelId: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0', body: '{}' }),
    );

    expect(new TextDecoder().decode(answer.body)).toBe('{"output":"ok"}');
    expect(byArn.$metadata.httpStatusCode).toBe(200);
    expect(upstream.seen.map((request) => request.url).slice(-2)).toEqual([
      '/model/amazon.nova-pro-v1%3A0/invoke',
      '/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A%3Afoundation-model%2Famazon.nova-lite-v1%3A0/invoke',
    ]);
  });

  it('passes a response stream through as it comes, without waiting for its end', async () => {
    order.splice(0);
    const answer = await client(agent).send(
      new ConverseStreamCommand({ modelId: 'us.amazon.nova-lite-v1:0', messages: [{ role: 'user', content: [{ text: 'hi' }] }] }),
    );
    const texts: string[] = [];

    for await (const streamed of answer.stream!) {
      if (streamed.messageStart) {
        order.push('client has the first event');
        clientSawFirstEvent();
      }
      if (streamed.contentBlockDelta?.delta?.text) texts.push(streamed.contentBlockDelta.delta.text);
    }

    expect(order).toEqual(['client has the first event', 'upstream sends the rest']);
    expect(texts).toEqual(['hello']);
  });

  it('refuses a model outside the list, and a function that does not invoke Bedrock, as AccessDeniedException with 403', async () => {
    const seenBefore = upstream.seen.length;
    const refusal = (sent: Promise<unknown>) =>
      sent.then(
        () => undefined,
        (error: AccessDeniedException) => error,
      );

    const outside = await refusal(
      client(agent).send(new InvokeModelCommand({ modelId: 'anthropic.claude-3-opus-20240229-v1:0', body: '{}' })),
    );
    const undeclared = await refusal(
      client(bystander).send(
        new ConverseStreamCommand({ modelId: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: [{ text: 'hi' }] }] }),
      ),
    );

    expect(outside).toBeInstanceOf(AccessDeniedException);
    expect(outside!.message).toContain(
      'not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-opus-20240229-v1:0',
    );
    expect(undeclared).toBeInstanceOf(AccessDeniedException);
    expect(undeclared!.$metadata.httpStatusCode).toBe(403);
    expect(denials.map((denial) => [denial.principal, denial.action])).toEqual([
      ['WorkflowStep', 'bedrock:InvokeModel'],
      ['Bystander', 'bedrock:InvokeModelWithResponseStream'],
    ]);
    expect(upstream.seen).toHaveLength(seenBefore);
  });

  it('answers an unsigned call in the REST-JSON shape: 403, the type in x-amzn-errortype, a message body', async () => {
    const refused = await fetch(`${endpoint}/model/amazon.nova-lite-v1%3A0/converse`, { method: 'POST', body: '{}' });

    expect(refused.status).toBe(403);
    expect(refused.headers.get('x-amzn-errortype')).toBe('MissingAuthenticationTokenException');
    expect(await refused.json()).toEqual({ message: expect.any(String) });
  });
});

describe('presigned S3 URLs through the front door', () => {
  const key = 'executions/run-1/images/cat.png';
  let dataDir: string;
  let stores: LocalStores;
  let endpoint: string;
  const s3 = (who: LocalPrincipal, region = 'us-east-1', at = endpoint) =>
    new S3Client({ endpoint: at, region, forcePathStyle: true, credentials: keysOf(who) });
  const get = (Key = key) => new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key });
  const refusal = async (response: Response) => [response.status, /<Code>(.*)<\/Code>/.exec(await response.text())?.[1]];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'presigned-'));
    stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
    closers.push(async () => {
      await stores.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    endpoint = await door('s3', stores.s3Endpoint);
    await s3(agent).send(new PutObjectCommand({ Bucket: LOCAL_BUCKET, Key: key, Body: 'png-bytes' }));
  });

  it('serves an object to a plain fetch of a URL presigned by a principal allowed to get it', async () => {
    const fetched = await fetch(await getSignedUrl(s3(agent), get(), { expiresIn: 600 }));

    expect([fetched.status, await fetched.text()]).toEqual([200, 'png-bytes']);
  });

  it('refuses a URL whose signature or key was tampered with as SignatureDoesNotMatch', async () => {
    const url = await getSignedUrl(s3(agent), get(), { expiresIn: 600 });
    const flipped = url.replace(
      /X-Amz-Signature=([0-9a-f]+)/,
      (_, signature: string) => `X-Amz-Signature=${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`,
    );

    expect(await refusal(await fetch(flipped))).toEqual([403, 'SignatureDoesNotMatch']);
    expect(await refusal(await fetch(url.replace('cat.png', 'dog.png')))).toEqual([403, 'SignatureDoesNotMatch']);
    expect(await refusal(await fetch(url.replace(/X-Amz-Signature=[0-9a-f]+/, 'X-Amz-Signature=not-hex')))).toEqual([
      403,
      'SignatureDoesNotMatch',
    ]);
  });

  it('refuses an expired URL as S3 does: AccessDenied, "Request has expired"', async () => {
    const url = await getSignedUrl(s3(agent), get(), { expiresIn: 1, signingDate: new Date(Date.now() - 5_000) });

    const expired = await fetch(url);

    expect(expired.status).toBe(403);
    expect(await expired.text()).toMatch(/<Code>AccessDenied<\/Code><Message>Request has expired<\/Message>/);
  });

  it('refuses a URL valid for more than 7 days, or with its parameters malformed, before checking its signature', async () => {
    const url = await getSignedUrl(s3(agent), get(), { expiresIn: 3600 });

    expect(await refusal(await fetch(url.replace('X-Amz-Expires=3600', 'X-Amz-Expires=604801')))).toEqual([
      400,
      'AuthorizationQueryParametersError',
    ]);
    expect(await refusal(await fetch(url.replace('X-Amz-Expires=3600', 'X-Amz-Expires=soon')))).toEqual([
      400,
      'AuthorizationQueryParametersError',
    ]);
    expect(await refusal(await fetch(url.replace(/&?X-Amz-Date=[^&]+/, '')))).toEqual([400, 'AuthorizationQueryParametersError']);
    expect(await refusal(await fetch(await getSignedUrl(s3(agent, 'eu-west-1'), get(), { expiresIn: 60 })))).toEqual([
      400,
      'AuthorizationQueryParametersError',
    ]);
  });

  it('refuses a URL signed by a principal without s3:GetObject on the key, as AccessDenied', async () => {
    const denied = await fetch(await getSignedUrl(s3(bystander), get(), { expiresIn: 60 }));
    const outsidePrefix = await fetch(await getSignedUrl(s3(agent), get('private/cat.png'), { expiresIn: 60 }));

    expect(await refusal(denied)).toEqual([403, 'AccessDenied']);
    expect(await refusal(outsidePrefix)).toEqual([403, 'AccessDenied']);
    expect(denials.map((denial) => [denial.principal, denial.action, denial.resource])).toEqual([
      ['Bystander', 's3:GetObject', `arn:aws:s3:::${LOCAL_BUCKET}/${key}`],
      ['WorkflowStep', 's3:GetObject', `arn:aws:s3:::${LOCAL_BUCKET}/private/cat.png`],
    ]);
  });

  it('refuses a URL sent with an Authorization header too, or with x-amz- headers it did not sign', async () => {
    const url = await getSignedUrl(s3(agent), get(), { expiresIn: 60 });

    expect(
      await refusal(
        await fetch(url, { headers: { authorization: 'AWS4-HMAC-SHA256 Credential=STEP/20250101/us-east-1/s3/aws4_request' } }),
      ),
    ).toEqual([400, 'InvalidArgument']);
    expect(await refusal(await fetch(url, { headers: { 'x-amz-request-payer': 'requester' } }))).toEqual([403, 'AccessDenied']);
  });

  it('asks the store for the object without the authentication parameters, keeping the others', async () => {
    const upstream = await recordingUpstream((_, response) => void response.writeHead(200).end('ok'));
    const recordingDoor = await door('s3', upstream.endpoint);
    const command = new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: key, ResponseContentDisposition: 'attachment; filename="cat.png"' });

    const fetched = await fetch(await getSignedUrl(s3(agent, 'us-east-1', recordingDoor), command, { expiresIn: 60 }));

    expect(fetched.status).toBe(200);
    const forwarded = new URL(upstream.seen[0]!.url, 'http://store');
    expect(forwarded.pathname).toBe(`/${LOCAL_BUCKET}/executions/run-1/images/cat.png`);
    expect(forwarded.searchParams.get('response-content-disposition')).toBe('attachment; filename="cat.png"');
    expect([...forwarded.searchParams.keys()].filter((name) => name.startsWith('X-Amz-'))).toEqual([]);
    expect(upstream.seen[0]!.headers.authorization).toBeUndefined();
  });
});
