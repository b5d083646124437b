import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AccessDeniedException,
  DeleteParameterCommand,
  GetParameterCommand,
  GetParametersCommand,
  HierarchyLevelLimitExceededException,
  ParameterAlreadyExists,
  ParameterNotFound,
  PutParameterCommand,
  SSMClient,
  ValidationException,
} from '@aws-sdk/client-ssm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFrontDoor, type AccessDenial } from '#lib/twin/iam/front-door.ts';
import { ADMINISTRATOR_POLICY, functionPolicy } from '#lib/twin/iam/function-policy.ts';
import { LOCAL_SECRETS_PREFIX } from '#lib/twin/local-arns.ts';
import { startSsmStandIn } from '#lib/twin/ssm-stand-in.ts';

/**
 * The twin's Parameter Store through the real SSMClient: it must refuse what SSM refuses, keep what it is given
 * across a restart, and, behind its front door, give a function only the secrets its declaration reads.
 */
type SsmStandIn = Awaited<ReturnType<typeof startSsmStandIn>>;
const dummy = { accessKeyId: 'a', secretAccessKey: 'b' };
const clientOf = (endpoint: string, credentials = dummy, region = 'us-east-1') =>
  new SSMClient({ endpoint, region, credentials, maxAttempts: 1 });

describe('the SSM Parameter Store stand-in', () => {
  let dataDir: string;
  let ssm: SsmStandIn;
  let client: SSMClient;
  const put = (Name: string, Value: string, extra: Partial<ConstructorParameters<typeof PutParameterCommand>[0]> = {}) =>
    client.send(new PutParameterCommand({ Name, Value, Type: 'String', ...extra }));

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ssm-'));
    ssm = await startSsmStandIn({ dataDir });
    client = clientOf(ssm.endpoint);
  });
  afterEach(async () => {
    await ssm.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers a SecureString read without decryption with an opaque ciphertext, never the value', async () => {
    await put('/app/token', 's3cret-value', { Type: 'SecureString' });

    const sealed = await client.send(new GetParameterCommand({ Name: '/app/token' }));
    const plain = await client.send(new GetParameterCommand({ Name: '/app/token', WithDecryption: true }));

    expect(sealed.Parameter).toMatchObject({ Name: '/app/token', Type: 'SecureString', Version: 1 });
    expect(sealed.Parameter!.Value).not.toContain('s3cret');
    expect(sealed.Parameter!.Value).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(plain.Parameter).toMatchObject({ Value: 's3cret-value', ARN: 'arn:aws:ssm:us-east-1:000000000000:parameter/app/token' });
    expect(plain.Parameter!.LastModifiedDate).toBeInstanceOf(Date);
  });

  it('refuses to replace a parameter unless asked to overwrite, and counts versions', async () => {
    await put('/app/name', 'one');

    await expect(put('/app/name', 'two')).rejects.toBeInstanceOf(ParameterAlreadyExists);
    const overwritten = await put('/app/name', 'two', { Overwrite: true });

    expect(overwritten.Version).toBe(2);
    expect((await client.send(new GetParameterCommand({ Name: '/app/name' }))).Parameter).toMatchObject({
      Value: 'two',
      Version: 2,
      Type: 'String',
    });
  });

  it('keeps a Standard parameter within 4096 characters', async () => {
    await put('/app/big', 'x'.repeat(4096));

    await expect(put('/app/bigger', 'x'.repeat(4097))).rejects.toBeInstanceOf(ValidationException);
    await expect(put('/app/bigger', 'x'.repeat(4097))).rejects.toThrow(/4096/);
    await expect(put('/app/empty', '')).rejects.toBeInstanceOf(ValidationException);
  });

  it('enforces the naming rules: characters, length, a leading slash on paths, 15 levels, no reserved prefix', async () => {
    const levels = (count: number) => Array.from({ length: count }, (_, i) => `/l${i}`).join('');

    await put(`/${'n'.repeat(1010)}`, 'v');
    await put(levels(15), 'v');
    await put('plain_name.with-dots', 'v');

    for (const name of [
      `/${'n'.repeat(1011)}`,
      '/has space',
      '/semi;colon',
      'app/no-leading-slash',
      '/double//slash',
      '/trailing/',
      '/aws/mine',
      'ssmThing',
      'AWSThing',
    ]) {
      await expect(put(name, 'v'), name).rejects.toBeInstanceOf(ValidationException);
    }
    await expect(put(levels(16), 'v')).rejects.toBeInstanceOf(HierarchyLevelLimitExceededException);
    await expect(put('/app/list', 'a,b', { Type: 'StringList' })).rejects.toBeInstanceOf(ValidationException);
    await expect(client.send(new PutParameterCommand({ Name: '/app/untyped', Value: 'v' }))).rejects.toBeInstanceOf(ValidationException);
  });

  it('answers GetParameters with the found parameters and the unknown names, for 1 to 10 names', async () => {
    await put('/app/a', 'A');
    await put('/app/b', 'B', { Type: 'SecureString' });

    const answer = await client.send(new GetParametersCommand({ Names: ['/app/a', '/app/b', '/app/missing'], WithDecryption: true }));

    expect(answer.Parameters!.map((parameter) => [parameter.Name, parameter.Value]).sort()).toEqual([
      ['/app/a', 'A'],
      ['/app/b', 'B'],
    ]);
    expect(answer.InvalidParameters).toEqual(['/app/missing']);
    const names = Array.from({ length: 10 }, (_, i) => `/app/n${i}`);
    expect((await client.send(new GetParametersCommand({ Names: names }))).InvalidParameters).toHaveLength(10);
    await expect(client.send(new GetParametersCommand({ Names: [...names, '/app/n10'] }))).rejects.toBeInstanceOf(ValidationException);
    await expect(client.send(new GetParametersCommand({ Names: [] }))).rejects.toBeInstanceOf(ValidationException);
  });

  it('deletes a parameter, after which it is not found', async () => {
    await put('/app/gone', 'v');

    await client.send(new DeleteParameterCommand({ Name: '/app/gone' }));

    await expect(client.send(new GetParameterCommand({ Name: '/app/gone' }))).rejects.toBeInstanceOf(ParameterNotFound);
    await expect(client.send(new DeleteParameterCommand({ Name: '/app/gone' }))).rejects.toBeInstanceOf(ParameterNotFound);
  });

  it('answers errors as AWS JSON 1.1: 400 and the type in __type', async () => {
    const call = (target: string, body: object) =>
      fetch(ssm.endpoint, {
        method: 'POST',
        headers: { 'x-amz-target': target, 'content-type': 'application/x-amz-json-1.1' },
        body: JSON.stringify(body),
      });

    const missing = await call('AmazonSSM.GetParameter', { Name: '/app/none' });
    const unknown = await call('AmazonSSM.LabelParameterVersion', { Name: '/app/none' });

    expect(missing.status).toBe(400);
    expect(missing.headers.get('content-type')).toBe('application/x-amz-json-1.1');
    expect(await missing.json()).toEqual({ __type: 'ParameterNotFound', message: expect.any(String) });
    expect([unknown.status, ((await unknown.json()) as { __type: string }).__type]).toEqual([400, 'UnknownOperationException']);
  });

  it('keeps parameters across a restart, in a file only its owner can read, replaced whole on each write', async () => {
    await put('/app/kept', 'v1', { Type: 'SecureString' });
    await put('/app/kept', 'v2', { Type: 'SecureString', Overwrite: true });
    await ssm.close();

    ssm = await startSsmStandIn({ dataDir });
    const kept = await clientOf(ssm.endpoint).send(new GetParameterCommand({ Name: '/app/kept', WithDecryption: true }));

    expect(kept.Parameter).toMatchObject({ Value: 'v2', Version: 2 });
    expect(statSync(join(dataDir, 'ssm', 'parameters.json')).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dataDir, 'ssm'))).toEqual(['parameters.json']);
  });

  it('refuses to start on a damaged file rather than overwrite it', async () => {
    await ssm.close();
    writeFileSync(join(dataDir, 'ssm', 'parameters.json'), '{"half');

    await expect(startSsmStandIn({ dataDir })).rejects.toThrow(/not valid JSON/);

    ssm = await startSsmStandIn({ dataDir: join(dataDir, 'fresh') });
  });
});

describe('the SSM stand-in behind its IAM front door', () => {
  const reader = {
    name: 'ToolRunner',
    accessKeyId: 'READER',
    secretAccessKey: 'reader-secret',
    policy: functionPolicy({ id: 'ToolRunner', tables: {}, readsSecrets: true }),
  };
  const bystander = {
    name: 'Bystander',
    accessKeyId: 'BYSTANDER',
    secretAccessKey: 'bystander-secret',
    policy: functionPolicy({ id: 'Bystander', tables: {} }),
  };
  const operator = { name: 'Operator', accessKeyId: 'OPERATOR', secretAccessKey: 'operator-secret', policy: ADMINISTRATOR_POLICY };
  const secret = `${LOCAL_SECRETS_PREFIX}/project-1/API_KEY`;
  const denials: AccessDenial[] = [];
  let dataDir: string;
  let ssm: SsmStandIn;
  let door: Awaited<ReturnType<typeof startFrontDoor>>;
  const as = (who: { accessKeyId: string; secretAccessKey: string }, region?: string) =>
    clientOf(door.endpoint, { accessKeyId: who.accessKeyId, secretAccessKey: who.secretAccessKey }, region);

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ssm-door-'));
    ssm = await startSsmStandIn({ dataDir });
    door = await startFrontDoor({
      service: 'ssm',
      upstream: ssm.endpoint,
      port: 0,
      principals: [reader, bystander, operator],
      onDenied: (denial) => denials.push(denial),
    });
    await as(operator).send(new PutParameterCommand({ Name: secret, Value: 'key-value', Type: 'SecureString' }));
    await as(operator).send(new PutParameterCommand({ Name: '/elsewhere/API_KEY', Value: 'other', Type: 'SecureString' }));
  });
  afterAll(async () => {
    await door?.close();
    await ssm?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => void denials.splice(0));

  it('lets a function that reads secrets read under the secrets prefix', async () => {
    const one = await as(reader).send(new GetParameterCommand({ Name: secret, WithDecryption: true }));
    const many = await as(reader).send(
      new GetParametersCommand({ Names: [secret, `${LOCAL_SECRETS_PREFIX}/project-1/NONE`], WithDecryption: true }),
    );

    expect(one.Parameter!.Value).toBe('key-value');
    expect([many.Parameters!.map((parameter) => parameter.Value), many.InvalidParameters]).toEqual([
      ['key-value'],
      [`${LOCAL_SECRETS_PREFIX}/project-1/NONE`],
    ]);
    expect(denials).toEqual([]);
  });

  it('refuses it a parameter outside the prefix, alone or among allowed names, as AccessDeniedException', async () => {
    const outside = as(reader).send(new GetParameterCommand({ Name: '/elsewhere/API_KEY', WithDecryption: true }));
    const mixed = as(reader).send(new GetParametersCommand({ Names: [secret, '/elsewhere/API_KEY'] }));
    const prefixItself = as(reader).send(new GetParameterCommand({ Name: '/local/secretsX/API_KEY' }));

    await expect(outside).rejects.toBeInstanceOf(AccessDeniedException);
    await expect(outside).rejects.toThrow(
      'not authorized to perform: ssm:GetParameter on resource: arn:aws:ssm:us-east-1:000000000000:parameter/elsewhere/API_KEY',
    );
    await expect(mixed).rejects.toThrow(/ssm:GetParameters on resource: .*parameter\/elsewhere\/API_KEY/);
    await expect(prefixItself).rejects.toBeInstanceOf(AccessDeniedException);
    expect(denials.map((denial) => [denial.principal, denial.action])).toEqual([
      ['ToolRunner', 'ssm:GetParameter'],
      ['ToolRunner', 'ssm:GetParameters'],
      ['ToolRunner', 'ssm:GetParameter'],
    ]);
  });

  it('refuses a function that reads secrets any write or delete, even under the prefix', async () => {
    const write = as(reader).send(new PutParameterCommand({ Name: secret, Value: 'replaced', Type: 'SecureString', Overwrite: true }));
    const remove = as(reader).send(new DeleteParameterCommand({ Name: secret }));

    await expect(write).rejects.toBeInstanceOf(AccessDeniedException);
    await expect(write).rejects.toThrow(/ssm:PutParameter/);
    await expect(remove).rejects.toThrow(/ssm:DeleteParameter/);
    expect((await as(operator).send(new GetParameterCommand({ Name: secret, WithDecryption: true }))).Parameter!.Value).toBe('key-value');
  });

  it('refuses a function that declares no secrets, and answers in JSON 1.1 with status 400', async () => {
    const refused = await as(bystander)
      .send(new GetParameterCommand({ Name: secret }))
      .then(
        () => undefined,
        (error: AccessDeniedException) => error,
      );

    expect(refused).toBeInstanceOf(AccessDeniedException);
    expect(refused!.$metadata.httpStatusCode).toBe(400);
  });

  it('refuses an unknown key, a wrong secret, another region and an unsigned call before looking at the parameter', async () => {
    const unsigned = await fetch(door.endpoint, {
      method: 'POST',
      headers: { 'x-amz-target': 'AmazonSSM.GetParameter', 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({ Name: secret }),
    });

    await expect(as({ accessKeyId: 'NOBODY', secretAccessKey: 'x' }).send(new GetParameterCommand({ Name: secret }))).rejects.toThrow(
      /security token included in the request is invalid/,
    );
    await expect(as({ ...reader, secretAccessKey: 'guessed' }).send(new GetParameterCommand({ Name: secret }))).rejects.toMatchObject({
      name: 'InvalidSignatureException',
    });
    await expect(as(reader, 'eu-west-1').send(new GetParameterCommand({ Name: secret }))).rejects.toThrow(/scoped to a valid region/);
    expect(unsigned.status).toBe(400);
    expect(await unsigned.json()).toMatchObject({ __type: expect.stringContaining('MissingAuthenticationTokenException') });
  });
});
