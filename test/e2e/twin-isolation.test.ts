import { METERED } from '#shared/resources.ts';
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeById, routes, type Route } from '#functions/routes.ts';
import { LAMBDA_SYNC_PAYLOAD_BYTES } from '#lib/twin/lambda/function-host.ts';
import { localTableArn } from '#lib/twin/local-arns.ts';
import type { LocalCredentials } from '#lib/twin/lambda/function-environment.ts';
import { LOCAL_BUCKET, LOCAL_REGION } from '#lib/twin/stores.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { http } from '../support/http.ts';

/**
 * Functions on the twin are isolated as on Lambda, and the stores' front doors allow each exactly what its route
 * or task entry declares, as the IAM role CDK builds from the same entry does.
 */
const probe = (id: string, path: string, tables: Route['tables']): Route => ({
  id,
  method: 'GET',
  path,
  handler: '../test/fixtures/functions/environment-probe.ts',
  errorShape: 'published',
  tables,
});

// The ping function as if its entry declared the usage table read-only: it counts every request in the link's day
// item there (an update).
const underGrantedPing: Route = {
  ...routeById('WebhookPing'),
  tables: { ...METERED, usage: 'read', links: 'read', counters: 'readWrite' },
};

let twin: TestTwin;

beforeAll(async () => {
  twin = await startTestTwin({
    routes: [
      ...routes.filter((route) => route.id !== 'WebhookPing'),
      underGrantedPing,
      probe('ProbeLinks', '/api/v1/probe/links', { links: 'read' }),
      probe('ProbeExecutions', '/api/v1/probe/executions', { executions: 'readWrite' }),
    ],
  });
});

afterAll(async () => {
  await twin?.close();
});

const dynamoAs = (credentials: LocalCredentials) =>
  new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials });
const s3As = (credentials: LocalCredentials) =>
  new S3Client({ endpoint: twin.twin.s3_endpoint, region: LOCAL_REGION, credentials, forcePathStyle: true });
const sfnAs = (credentials: LocalCredentials) =>
  new SFNClient({ endpoint: twin.twin.step_functions_endpoint, region: LOCAL_REGION, credentials });

async function failureOf(work: Promise<unknown>): Promise<{ name: string; message: string; status?: number }> {
  try {
    await work;
  } catch (error) {
    const failure = error as Error & { $metadata?: { httpStatusCode?: number } };
    return { name: failure.name, message: failure.message, status: failure.$metadata?.httpStatusCode };
  }
  throw new Error('expected the call to be refused');
}

describe('a handler that touches what its entry does not declare is refused', () => {
  it('answers a server error and records AccessDenied for the counter update of a read-only grant', async () => {
    const { token } = await boundLink(twin, 'calls');
    const before = twin.accessDenials.length;
    const response = await http(`${twin.webhookUrl}/api/v1/webhooks/${token}/ping`);
    expect(response.status).toBeGreaterThanOrEqual(500);
    expect(twin.accessDenials.slice(before)).toContainEqual({
      principal: 'WebhookPing',
      action: 'dynamodb:UpdateItem',
      resource: localTableArn('usage'),
    });
  });

  it('refuses a function any table its entry does not name, and a write where it declares read', async () => {
    const ping = dynamoAs(twin.credentialsOf('WebhookPing'));
    const key = { pk: { S: 'nothing-here' } };
    expect(await ping.send(new GetItemCommand({ TableName: 'local-links', Key: key }))).toMatchObject({
      $metadata: { httpStatusCode: 200 },
    });
    const undeclared = await failureOf(ping.send(new GetItemCommand({ TableName: 'local-executions', Key: key })));
    expect(undeclared).toMatchObject({ name: 'AccessDeniedException', status: 400 });
    expect(undeclared.message).toContain(`dynamodb:GetItem on resource: ${localTableArn('executions')}`);
    const readOnly = await failureOf(ping.send(new PutItemCommand({ TableName: 'local-links', Item: key })));
    expect(readOnly).toMatchObject({ name: 'AccessDeniedException' });
    ping.destroy();
  });

  it('allows S3 objects only under the declared prefixes, and hides a missing object behind 403 as S3 does without ListBucket', async () => {
    const getExecution = s3As(twin.credentialsOf('PublishedGetExecution'));
    const missing = await failureOf(getExecution.send(new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: 'executions/missing' })));
    expect(missing).toMatchObject({ name: 'AccessDenied', status: 403 });
    const write = await failureOf(getExecution.send(new PutObjectCommand({ Bucket: LOCAL_BUCKET, Key: 'executions/x', Body: 'x' })));
    expect(write).toMatchObject({ name: 'AccessDenied', status: 403 });
    const otherPrefix = await failureOf(getExecution.send(new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: 'inbound/anything' })));
    expect(otherPrefix).toMatchObject({ name: 'AccessDenied', status: 403 });
    // The operator may list the bucket, so S3 tells it the truth.
    const operatorView = await failureOf(twin.s3.send(new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: 'executions/missing' })));
    expect(operatorView).toMatchObject({ name: 'NoSuchKey', status: 404 });
    getExecution.destroy();
  });

  it('lets only functions granted start start an execution', async () => {
    const input = { stateMachineArn: twin.twin.state_machine_arn, input: '{}' };
    const refused = await failureOf(sfnAs(twin.credentialsOf('PublishedGetExecution')).send(new StartExecutionCommand(input)));
    expect(refused).toMatchObject({ name: 'AccessDeniedException' });
    expect(refused.message).toContain('states:StartExecution');
  });

  it('refuses a request signed with the wrong secret or an unknown key', async () => {
    const { accessKeyId } = twin.credentialsOf('WebhookPostEvent');
    const key = { pk: { S: 'x' } };
    const forged = await failureOf(
      dynamoAs({ accessKeyId, secretAccessKey: 'guessed' }).send(new GetItemCommand({ TableName: 'local-links', Key: key })),
    );
    expect(forged).toMatchObject({ name: 'InvalidSignatureException' });
    const unknown = await failureOf(
      dynamoAs({ accessKeyId: 'NOBODY', secretAccessKey: 'x' }).send(new GetItemCommand({ TableName: 'local-links', Key: key })),
    );
    expect(unknown).toMatchObject({ name: 'UnrecognizedClientException' });
    const forgedS3 = await failureOf(
      s3As({ accessKeyId, secretAccessKey: 'guessed' }).send(new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: 'inbound/x' })),
    );
    expect(forgedS3).toMatchObject({ name: 'SignatureDoesNotMatch', status: 403 });
  });
});

describe('each function runs in its own environment, as on Lambda', () => {
  it('sees only what its entry declares, with its own credentials', async () => {
    const response = await http(`${twin.url}/prod/api/v1/probe/links`);
    expect(response.status).toBe(200);
    const environment = response.body.environment as string[];
    expect(environment).toContain('LINKS_TABLE');
    for (const undeclared of ['EXECUTIONS_TABLE', 'COUNTERS_TABLE', 'BODIES_BUCKET', 'STATE_MACHINE_ARN', 'DATA_DIR', 'PORT']) {
      expect(environment, undeclared).not.toContain(undeclared);
    }
    expect(response.body.accessKeyId).toBe(twin.credentialsOf('ProbeLinks').accessKeyId);
    const other = await http(`${twin.url}/prod/api/v1/probe/executions`);
    expect(other.body.environment).toContain('EXECUTIONS_TABLE');
    expect(other.body.environment).not.toContain('LINKS_TABLE');
  });

  it('shares no module state with another function that loads the same module', async () => {
    const first = await http(`${twin.url}/api/v1/probe/links`);
    const second = await http(`${twin.url}/api/v1/probe/links`);
    expect(second.body.invocations).toBe(first.body.invocations + 1);
    const before = (await http(`${twin.url}/api/v1/probe/executions`)).body.invocations as number;
    await http(`${twin.url}/api/v1/probe/links`);
    expect((await http(`${twin.url}/api/v1/probe/executions`)).body.invocations).toBe(before + 1);
  });

  it('answers 502 with Retry-After (the DEFAULT_5XX gateway response) when a function returns something that is not a proxy result', async () => {
    const response = await http(`${twin.url}/api/v1/probe/links?malformed=1`);
    expect(response.status).toBe(502);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toEqual({ error: 'Internal server error', detail: 'Internal server error' });
  });

  it('answers 502 when a function returns more than Lambda lets a synchronous invocation return', async () => {
    const fits = await http(`${twin.url}/api/v1/probe/links?pad=${LAMBDA_SYNC_PAYLOAD_BYTES - 64 * 1024}`);
    expect(fits.status).toBe(200);
    const tooLarge = await http(`${twin.url}/api/v1/probe/links?pad=${LAMBDA_SYNC_PAYLOAD_BYTES}`);
    expect(tooLarge.status).toBe(502);
    expect(tooLarge.body).toEqual({ error: 'Internal server error', detail: 'Internal server error' });
  });
});
