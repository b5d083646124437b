import { fileURLToPath } from 'node:url';
import { ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SFNClient, StartExecutionCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { GetParameterCommand, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBedrockClient } from '#shared/clients/bedrock.ts';
import { FAULT_KINDS, FaultPlan, type FaultKind } from '#lib/twin/faults.ts';
import { LocalLambda, type InvocationTrace } from '#lib/twin/lambda/function-host.ts';
import type { LocalCredentials } from '#lib/twin/lambda/function-environment.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '#lib/twin/stores.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { clientResponse } from '../support/client-response.ts';
import { callEvent } from '../support/events.ts';
import { http } from '../support/http.ts';

/**
 * `TWIN_FAULTS` on a running twin: a function's store call gets AWS's own error (the real SDK names it), the operator
 * sees the real store, each fault is counted and logged, and a crashed invocation has made its writes.
 */
const ZERO_COUNTS = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0]));

/** A line arriving in `lines`, waited for as it comes (lines are written as responses close, after the client has its answer). */
function lineLog() {
  const lines: string[] = [];
  const waiting = new Set<() => void>();
  const write = (line: string) => {
    lines.push(line);
    for (const check of [...waiting]) check();
  };
  const arrival = (pattern: RegExp) =>
    new Promise<string>((found) => {
      const check = () => {
        const line = lines.find((candidate) => pattern.test(candidate));
        if (line === undefined) return;
        waiting.delete(check);
        found(line);
      };
      waiting.add(check);
      check();
    });
  return { lines, write, arrival };
}

async function failureOf(work: Promise<unknown>): Promise<{ name: string; status?: number }> {
  try {
    await work;
  } catch (error) {
    const failure = error as Error & { $metadata?: { httpStatusCode?: number } };
    return { name: failure.name, status: failure.$metadata?.httpStatusCode };
  }
  throw new Error('expected the call to fail');
}

describe('store faults on the twin', () => {
  // Every rate starts at 0; each test turns on the kind it shows.
  const plan = new FaultPlan(20_260_101);
  const faultLines = lineLog();
  const requestLines = lineLog();
  let twin: TestTwin;
  const clients: { destroy(): void }[] = [];
  const as = <Client extends { destroy(): void }>(client: Client) => (clients.push(client), client);
  const dynamoAs = (credentials: LocalCredentials) =>
    as(new DynamoDBClient({ endpoint: twin.twin.dynamodb_endpoint, region: LOCAL_REGION, credentials, maxAttempts: 1 }));
  const s3As = (credentials: LocalCredentials) =>
    as(new S3Client({ endpoint: twin.twin.s3_endpoint, region: LOCAL_REGION, credentials, forcePathStyle: true, maxAttempts: 1 }));
  const sfnAs = (credentials: LocalCredentials) =>
    as(new SFNClient({ endpoint: twin.twin.step_functions_endpoint, region: LOCAL_REGION, credentials, maxAttempts: 1 }));
  const ssmAs = (credentials: LocalCredentials) =>
    as(new SSMClient({ endpoint: twin.twin.ssm_endpoint, region: LOCAL_REGION, credentials, maxAttempts: 1 }));
  const injected = (kind: FaultKind) => twin.faultCounts()[kind];

  beforeAll(async () => {
    twin = await startTestTwin({ faults: plan, onFaultLine: faultLines.write, onRequestLine: requestLines.write });
  });
  afterEach(() => {
    for (const kind of FAULT_KINDS) plan.set(kind, 0);
  });
  afterAll(async () => {
    clients.forEach((client) => client.destroy());
    await twin?.close();
  });

  it("throttles a function's DynamoDB call as DynamoDB does, in both its names, and leaves the operator's alone", async () => {
    plan.set('dynamodb:throttle', 1);
    const ping = dynamoAs(twin.credentialsOf('WebhookPing'));
    const get = () => ping.send(new GetItemCommand({ TableName: twin.twin.tables.links, Key: { link_id: { S: 'nothing-here' } } }));
    const failures = [];
    for (let call = 0; call < 8; call += 1) failures.push(await failureOf(get()));
    expect(new Set(failures.map((failure) => failure.status))).toEqual(new Set([400]));
    expect(new Set(failures.map((failure) => failure.name))).toEqual(
      new Set(['ProvisionedThroughputExceededException', 'ThrottlingException']),
    );
    expect(injected('dynamodb:throttle')).toBe(8);
    const line = new RegExp(
      `^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} fault dynamodb:throttle GetItem ${twin.twin.tables.links} by WebhookPing (ProvisionedThroughputExceededException|ThrottlingException)$`,
    );
    expect(faultLines.lines.filter((candidate) => line.test(candidate))).toHaveLength(8);

    // The operator (tests, the admin CLI) reads and writes the real store.
    await expect(twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.links, Limit: 1 }))).resolves.toBeDefined();
    await expect(twin.admin('links', 'issue', '--type', 'calls')).resolves.toMatchObject({ link_id: expect.any(String) });
    expect(injected('dynamodb:throttle')).toBe(8);
  });

  it("answers a DynamoDB server error with 500 InternalServerError, which the product's ping answers within its contract", async () => {
    const { token } = await boundLink(twin, 'calls');
    plan.set('dynamodb:error', 1);
    const failure = await failureOf(
      dynamoAs(twin.credentialsOf('WebhookPing')).send(
        new GetItemCommand({ TableName: twin.twin.tables.links, Key: { link_id: { S: 'x' } } }),
      ),
    );
    expect(failure).toEqual({ name: 'InternalServerError', status: 500 });
    const before = injected('dynamodb:error');
    // Through the API: the function's client retries, gets the error each time, and the route answers as its document says.
    const answer = await http(`${twin.webhookUrl}/api/v1/webhooks/${token}/ping`);
    expect(answer.status).toBeGreaterThanOrEqual(500);
    expect(injected('dynamodb:error')).toBeGreaterThan(before);
  });

  it("fails a function's S3 call with 500 InternalError or 503 SlowDown, a HEAD without a body, and not the operator's", async () => {
    const key = 'executions/fault-probe/input.json';
    await twin.s3.send(new PutObjectCommand({ Bucket: twin.twin.bucket, Key: key, Body: '{}' }));
    plan.set('s3:error', 1);
    const reader = s3As(twin.credentialsOf('PublishedGetExecution'));
    const failures = [];
    for (let call = 0; call < 8; call += 1)
      failures.push(await failureOf(reader.send(new GetObjectCommand({ Bucket: twin.twin.bucket, Key: key }))));
    expect(new Set(failures.map((failure) => `${failure.status} ${failure.name}`))).toEqual(new Set(['500 InternalError', '503 SlowDown']));
    const head = await failureOf(reader.send(new HeadObjectCommand({ Bucket: twin.twin.bucket, Key: key })));
    expect([500, 503]).toContain(head.status);
    expect(injected('s3:error')).toBe(9);
    expect(
      faultLines.lines.some((line) =>
        line.includes(`fault s3:error GetObject ${twin.twin.bucket}/executions/fault-probe/input.json by PublishedGetExecution`),
      ),
    ).toBe(true);

    const own = await twin.s3.send(new GetObjectCommand({ Bucket: twin.twin.bucket, Key: key }));
    expect(await own.Body!.transformToString()).toBe('{}');
  });

  it('throttles the Step Functions calls AWS throttles with 400 ThrottlingException', async () => {
    plan.set('sfn:throttle', 1);
    const start = await failureOf(
      sfnAs(twin.credentialsOf('PublishedExecute')).send(
        new StartExecutionCommand({ stateMachineArn: twin.twin.state_machine_arn, input: '{}' }),
      ),
    );
    expect(start).toEqual({ name: 'ThrottlingException', status: 400 });
    const executionArn = `${twin.twin.state_machine_arn.replace(':stateMachine:', ':execution:')}:no-such-run`;
    const stop = await failureOf(sfnAs(twin.credentialsOf('PublishedStopExecution')).send(new StopExecutionCommand({ executionArn })));
    expect(stop).toEqual({ name: 'ThrottlingException', status: 400 });
    expect(injected('sfn:throttle')).toBe(2);
    // The operator's call reaches the stand-in, which knows no such execution.
    const operator = sfnAs(LOCAL_CREDENTIALS);
    expect((await failureOf(operator.send(new StopExecutionCommand({ executionArn })))).name).toBe('ExecutionDoesNotExist');
  });

  it("throttles the step function's SSM read with 400 ThrottlingException, not the operator's write", async () => {
    plan.set('ssm:throttle', 1);
    const name = `${twin.twin.secrets_prefix}/fault-probe/KEY`;
    await ssmAs(LOCAL_CREDENTIALS).send(new PutParameterCommand({ Name: name, Value: 'v', Type: 'SecureString', Overwrite: true }));
    const read = await failureOf(
      ssmAs(twin.credentialsOf('WorkflowStep')).send(new GetParameterCommand({ Name: name, WithDecryption: true })),
    );
    expect(read).toEqual({ name: 'ThrottlingException', status: 400 });
    expect(injected('ssm:throttle')).toBe(1);
  });

  it('throttles a Bedrock stream with 429 ThrottlingException before any byte of it', async () => {
    plan.set('bedrock:throttle', 1);
    const profile = [...twin.inferenceProfiles.values()][0]!;
    const step = createBedrockClient({
      endpoint: twin.twin.bedrock_endpoint,
      region: LOCAL_REGION,
      credentials: twin.credentialsOf('WorkflowStep'),
      maxAttempts: 1,
    });
    clients.push(step);
    twin.bedrock.reset();
    const converse = await failureOf(
      step.send(new ConverseStreamCommand({ modelId: profile, messages: [{ role: 'user', content: [{ text: 'hi' }] }] })),
    );
    expect(converse).toEqual({ name: 'ThrottlingException', status: 429 });
    expect(twin.bedrock.requests).toEqual([]);
    expect(injected('bedrock:throttle')).toBe(1);
  });

  // An HTTP API answers a failed integration 500 `{"message":"Internal Server Error"}` by itself (no Retry-After),
  // docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html; the webhook document lists it.
  it('fails an invocation before its handler with lambda:error: the HTTP API answers 500 and nothing is stored', async () => {
    const link = await boundLink(twin, 'calls');
    plan.set('lambda:error', 1);
    const event = callEvent();
    const answer = await http(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`, { method: 'POST', body: JSON.stringify(event) });
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({ message: 'Internal Server Error' });
    expect(answer.headers['retry-after']).toBeUndefined();
    expect(await storedEvent(link.sourceId, event.external_id)).toBeUndefined();
    expect(injected('lambda:error')).toBe(1);
    await faultLines.arrival(/ fault lambda:error WebhookPostEvent Runtime\.ExitError$/);
  });

  it('crashes an invocation after its writes with lambda:crash-after-write: 500, the event stored, a retry a cold duplicate', async () => {
    const link = await boundLink(twin, 'calls');
    const url = `${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`;
    const event = callEvent();
    plan.set('lambda:crash-after-write', 1);
    const crashed = await http(url, { method: 'POST', body: JSON.stringify(event) });
    expect(crashed.status).toBe(500);
    expect(crashed.body).toEqual({ message: 'Internal Server Error' });
    expect(injected('lambda:crash-after-write')).toBe(1);
    await faultLines.arrival(/ fault lambda:crash-after-write WebhookPostEvent Runtime\.ExitError$/);
    const stored = await storedEvent(link.sourceId, event.external_id);
    expect(stored).toMatchObject({ state: 'queued', event_id: expect.any(Number) });

    plan.set('lambda:crash-after-write', 0);
    const retry = await http(url, { method: 'POST', body: JSON.stringify(event) });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ status: 'duplicate', external_id: event.external_id, event_id: stored!.event_id });
    // The crashed environment is gone: the retry started a fresh one.
    const shownToken = link.token.slice(0, 10).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const line = await requestLines.arrival(new RegExp(` POST /api/v1/webhooks/${shownToken}…/events 200 WebhookPostEvent `));
    expect(line).toMatch(/ cold$/);
  });

  async function storedEvent(sourceId: string, externalId: string) {
    const result = await twin.dynamo.send(
      new GetCommand({ TableName: twin.twin.tables.inboundEvents, Key: { source_id: sourceId, external_id: externalId } }),
    );
    return result.Item;
  }
});

describe('a twin without faults', () => {
  let twin: TestTwin;
  beforeAll(async () => {
    twin = await startTestTwin();
  });
  afterAll(() => twin?.close());

  it('counts none of any kind, and its functions reach the stores', async () => {
    const { token } = await boundLink(twin, 'calls');
    expect((await http(`${twin.webhookUrl}/api/v1/webhooks/${token}/ping`)).status).toBe(200);
    expect(twin.faultCounts()).toEqual(ZERO_COUNTS);
  });
});

describe("the Lambda host's faults", () => {
  const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/functions/${name}.ts`, import.meta.url));
  const hosts: LocalLambda[] = [];
  const host = (name: string, faults: FaultPlan, streaming = false) => {
    const lambda = new LocalLambda({
      functionName: name,
      handlerFile: fixture(name),
      environment: {},
      timeoutSeconds: 20,
      streaming,
      memoryMb: 256,
      faults,
    });
    hosts.push(lambda);
    return lambda;
  };
  afterAll(async () => {
    await Promise.all(hosts.map((lambda) => lambda.close()));
  });

  it("fails with Lambda's Runtime.ExitError without running the handler, and the next invocation is a cold start", async () => {
    const plan = new FaultPlan(1);
    const hog = host('buffer-hog', plan);
    expect(await hog.invoke({ mb: 0 })).toEqual({ held: 0, invocations: 1 });
    expect(await hog.invoke({ mb: 0 })).toEqual({ held: 0, invocations: 2 });
    plan.set('lambda:error', 1);
    const failure = await hog.invoke({ mb: 0 }).catch((error: Error) => error);
    expect((failure as Error).name).toBe('Runtime.ExitError');
    expect((failure as Error).message).toMatch(/^RequestId: [0-9a-f-]{36} Error: Runtime exited with error: exit status 1$/);
    plan.set('lambda:error', 0);
    const trace: InvocationTrace = { cold: false };
    expect(await hog.invoke({ mb: 0 }, undefined, trace)).toEqual({ held: 0, invocations: 1 });
    expect(trace.cold).toBe(true);
    expect(plan.counts()['lambda:error']).toBe(1);
  }, 60_000);

  it('runs a crashing handler to its end, then fails it, and keeps a concurrent invocation of the same worker alive', async () => {
    const plan = new FaultPlan(2);
    const hog = host('buffer-hog', plan);
    await hog.invoke({ mb: 0 });
    // Started before the crash, on the same worker: it finishes, as another environment's invocation would on Lambda.
    const bystander = hog.invoke({ mb: 0, holdMs: 3000 });
    plan.set('lambda:crash-after-write', 1);
    const crashed = await hog.invoke({ mb: 0 }).catch((error: Error) => error);
    plan.set('lambda:crash-after-write', 0);
    expect((crashed as Error).name).toBe('Runtime.ExitError');
    expect(await bystander).toEqual({ held: 0, invocations: expect.any(Number) });
    expect(await hog.invoke({ mb: 0 })).toEqual({ held: 0, invocations: 1 });
    expect(plan.counts()['lambda:crash-after-write']).toBe(1);
  }, 60_000);

  it('cuts a crashing stream after its last write: the bytes went out, the end never did', async () => {
    const plan = new FaultPlan(3, { 'lambda:crash-after-write': 1 });
    const writer = host('stream-writer', plan, true);
    const { log, body, toClient } = clientResponse();
    const failure = await writer.invokeStreaming({ writes: ['one ', 'two'] }, toClient).catch((error: Error) => error);
    expect((failure as Error).name).toBe('Runtime.ExitError');
    expect(body()).toBe('one two');
    expect(log.map((entry) => entry.kind)).not.toContain('end');
    expect(toClient.destroyed).toBe(true);

    // Nothing written: nothing sent either, and the gateway is left to answer 502.
    const silent = clientResponse();
    await expect(writer.invokeStreaming({ writes: [] }, silent.toClient)).rejects.toThrow(/Runtime exited with error/);
    expect(silent.log).toEqual([]);
  }, 60_000);

  it('delays an invocation before its handler and counts it, the answer unchanged', async () => {
    const plan = new FaultPlan(4, { 'lambda:delay': 1 }, 20);
    const heard: string[] = [];
    plan.onFault((fault) => heard.push(`${fault.kind} ${fault.functionName} ${fault.outcome}`));
    expect(await host('sleeper', plan).invoke({ sleepMs: 0 })).toEqual({ statusCode: 200, body: 'slept' });
    expect(heard).toEqual(['lambda:delay sleeper 20 ms']);
    expect(plan.counts()).toEqual({ ...ZERO_COUNTS, 'lambda:delay': 1 });
  }, 60_000);
});
