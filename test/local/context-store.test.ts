import { executionRecord } from '../support/execution-record.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyPart, memoryPartitionKey, memorySortKey, threadPartitionKey } from '#executions/user-state-keys.ts';
import { createUserStateRepository } from '#executions/user-state-repository.ts';
import { createExecutionsRepository } from '#executions/executions-repository.ts';
import { initialCursor } from '#executions/step-state.ts';
import { createContextStore } from '#executions/context-store.ts';
import { createExecutionValues } from '#executions/execution-values.ts';
import { createS3ObjectStore } from '#executions/execution-values-s3.ts';
import {
  MAX_CALLER_ID_LENGTH,
  MAX_EXECUTION_RESULT_BYTES,
  MAX_INLINE_KEY_PART_BYTES,
  MAX_MEMORY_KEY_BYTES,
  EXECUTION_VALUE_INLINE_MAX_BYTES,
} from '#shared/limits.ts';
import { LOCAL_BUCKET, LOCAL_CREDENTIALS, LOCAL_REGION, localTableName, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

describe('conversation keys', () => {
  const worstIds = [
    'ж'.repeat(MAX_CALLER_ID_LENGTH),
    '𝄞'.repeat(MAX_CALLER_ID_LENGTH / 2),
    '#%'.repeat(MAX_CALLER_ID_LENGTH / 2),
    '\u0001'.repeat(MAX_CALLER_ID_LENGTH),
  ];

  it('stay within DynamoDB key limits for every id the API accepts', () => {
    for (const user of worstIds) {
      for (const thread of worstIds) {
        expect(utf8(threadPartitionKey('default', user, thread))).toBeLessThanOrEqual(2048);
      }
      expect(utf8(memoryPartitionKey('default', user))).toBeLessThanOrEqual(2048);
    }
  });

  it('keep short ids readable (percent-encoded as before) and replace long ones by their SHA-256', () => {
    expect(threadPartitionKey('default', 'user-1', 'thread 1')).toBe('thread#default#user-1#thread%201');
    expect(memoryPartitionKey('default', 'ann@example.com')).toBe('memory#default#ann%40example.com');
    const long = keyPart('ж'.repeat(256));
    expect(long).toMatch(/^%~[A-Za-z0-9_-]{43}$/);
    expect(keyPart('ж'.repeat(255) + 'и')).not.toBe(long);
    // The hashed form cannot be the encoding of any id: encodeURIComponent never writes `%~`.
    expect(keyPart('%~')).toBe('%25~');
    expect(utf8(keyPart('a'.repeat(MAX_INLINE_KEY_PART_BYTES)))).toBe(MAX_INLINE_KEY_PART_BYTES);
    expect(keyPart('a'.repeat(MAX_INLINE_KEY_PART_BYTES + 1))).toMatch(/^%~/);
  });

  it('keep ids containing the separator apart', () => {
    expect(threadPartitionKey('p', 'a#b', 'c')).not.toBe(threadPartitionKey('p', 'a', 'b#c'));
  });

  it('use memory names as sort keys up to MAX_MEMORY_KEY_BYTES and a hash beyond', () => {
    expect(memorySortKey('constructor')).toBe('key#constructor');
    const atLimit = 'я'.repeat(MAX_MEMORY_KEY_BYTES / 2);
    expect(memorySortKey(atLimit)).toBe(`key#${atLimit}`);
    expect(memorySortKey(`${atLimit}я`)).toMatch(/^keyh#[A-Za-z0-9_-]{43}$/);
    expect(utf8(memorySortKey('𝄞'.repeat(10_000)))).toBeLessThanOrEqual(1024);
  });
});

describe('the step state', () => {
  it('starts as ids and a cursor of a few fields', () => {
    const cursor = initialCursor({ start: 'first' } as never);
    expect(cursor).toEqual({ node: 'first', steps: 0, turns: 0, outputs: 0, approval_node: null });
  });
});

describe('run values in the executions table and S3 (embedded stores)', () => {
  let dataDir: string;
  let stores: LocalStores;
  let dynamo: DynamoDBDocumentClient;
  let s3: S3Client;
  const s3Calls: string[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'run-store-'));
    stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
    dynamo = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: stores.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    );
    s3 = new S3Client({ endpoint: stores.s3Endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
    s3.middlewareStack.add(
      (next, context) => (args) => {
        s3Calls.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize', name: 'recordCalls' },
    );
  });
  afterAll(async () => {
    dynamo?.destroy();
    s3?.destroy();
    await stores?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const values = () => createExecutionValues(createS3ObjectStore(s3, LOCAL_BUCKET));
  const executions = () => createExecutionsRepository(dynamo, localTableName('executions'), values());
  const item = async (pk: string) =>
    (await dynamo.send(new GetCommand({ TableName: localTableName('executions'), Key: { pk }, ConsistentRead: true }))).Item!;
  const object = async (key: string) =>
    await (await s3.send(new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: key }))).Body!.transformToString('utf8');

  const newRecord = () => executionRecord();

  it(`keeps a value of exactly ${EXECUTION_VALUE_INLINE_MAX_BYTES} bytes inline and a byte more in S3`, async () => {
    const store = values();
    const atLimit = 'x'.repeat(EXECUTION_VALUE_INLINE_MAX_BYTES - 2); // the JSON text adds the quotes
    expect(await store.store(atLimit, 'executions/x/inline.json')).toEqual({ json: JSON.stringify(atLimit) });
    const over = await store.store(`${atLimit}x`, 'executions/x/over.json');
    expect(over).toEqual({ s3: 'executions/x/over.json' });
    expect(await store.load(over)).toBe(`${atLimit}x`);
  });

  it('refuses a large value in a function without the bucket, rather than losing it', async () => {
    const store = createExecutionValues(undefined);
    expect(await store.store('small', 'executions/x/y.json')).toEqual({ json: '"small"' });
    await expect(store.store('x'.repeat(EXECUTION_VALUE_INLINE_MAX_BYTES), 'executions/x/y.json')).rejects.toThrow(
      'no access to the bodies bucket',
    );
  });

  it('stores a large output in S3 with a pointer, answers it whole, and does not read it for ALL_OLD answers', async () => {
    const repository = executions();
    const record = newRecord();
    await repository.create(record, Date.now() + 60_000);
    const output = { text: 'ж"'.repeat(EXECUTION_VALUE_INLINE_MAX_BYTES), constructor: 'kept', n: 12345678901234567000 };
    await repository.transition(record.execution_id, ['queued'], { status: 'completed', output });

    const stored = await item(`execution#${record.execution_id}`);
    expect(stored.output_s3).toBe(`executions/${record.execution_id}/output.json`);
    expect(stored).not.toHaveProperty('output_json');
    expect(utf8(JSON.stringify(stored))).toBeLessThan(2048);
    expect(JSON.parse(await object(stored.output_s3))).toEqual(output);

    const read = await repository.get(record.execution_id, true);
    expect(read).toMatchObject({ status: 'completed', output });
    expect(read).not.toHaveProperty('output_s3');
    expect(read).not.toHaveProperty('pk');

    s3Calls.length = 0;
    const previous = await repository.transition(record.execution_id, ['completed'], { total_steps: 3 });
    expect(previous).toMatchObject({ status: 'completed', output: null });
    expect(s3Calls).toEqual([]);

    // A small output replaces the pointer.
    await repository.transition(record.execution_id, ['completed'], { output: 'small' });
    const small = await item(`execution#${record.execution_id}`);
    expect(small).toMatchObject({ output_json: '"small"' });
    expect(small).not.toHaveProperty('output_s3');
    expect((await repository.get(record.execution_id))!.output).toBe('small');
  });

  it(`keeps a long error in S3 and cuts one over ${MAX_EXECUTION_RESULT_BYTES} bytes`, async () => {
    const repository = executions();
    const record = newRecord();
    await repository.create(record, Date.now() + 60_000);
    const error = 'й'.repeat(MAX_EXECUTION_RESULT_BYTES);
    await repository.transition(record.execution_id, ['queued'], { status: 'failed', error });
    const stored = await item(`execution#${record.execution_id}`);
    expect(stored).toMatchObject({ error: null, error_s3: `executions/${record.execution_id}/error.json` });
    const read = (await repository.get(record.execution_id))!.error!;
    expect(utf8(read)).toBeLessThanOrEqual(MAX_EXECUTION_RESULT_BYTES);
    expect(read).toMatch(new RegExp(`^й+ … \\(cut from ${utf8(error)} bytes\\)$`));
  });

  it('keeps a long approval message in S3 and reads it only while the execution is interrupted', async () => {
    const repository = executions();
    const record = newRecord();
    await repository.create(record, Date.now() + 60_000);
    const message = 'm'.repeat(EXECUTION_VALUE_INLINE_MAX_BYTES + 1);
    await repository.transition(record.execution_id, ['queued'], {
      status: 'running',
      pending_approval: { approval_id: 'apr_1', node_id: 'ask', message },
    });
    expect((await item(`execution#${record.execution_id}`)).pending_approval).toEqual({
      approval_id: 'apr_1',
      node_id: 'ask',
      message: null,
      message_s3: `executions/${record.execution_id}/approval-apr_1.json`,
    });

    s3Calls.length = 0;
    expect((await repository.get(record.execution_id))!.pending_approval).toEqual({ approval_id: 'apr_1', node_id: 'ask', message: '' });
    expect(s3Calls).toEqual([]);

    const claimed = await repository.transition(
      record.execution_id,
      ['running'],
      { status: 'interrupted', task_token: 'token' },
      {
        expression: 'pending_approval.approval_id = :approval',
        values: { ':approval': 'apr_1' },
      },
    );
    expect(claimed).toBeDefined();
    expect((await repository.get(record.execution_id))!.pending_approval).toEqual({ approval_id: 'apr_1', node_id: 'ask', message });
  });

  it('writes the execution context once and reads it back with every key the caller sent', async () => {
    const runs = createContextStore(dynamo, localTableName('executions'), values());
    const executionId = randomUUID();
    const input = JSON.parse('{"message":"hi","constructor":{"__proto__":1},"big":"' + 'b'.repeat(EXECUTION_VALUE_INLINE_MAX_BYTES) + '"}');
    const expiresAtMs = Date.now() + 60_000;
    await runs.createContext(
      {
        execution_id: executionId,
        project_id: 'p',
        publication_id: 'pub',
        workflow_id: 'w',
        user_id: 'u',
        thread_id: 't',
        input,
        overrides: { a: { reply: 'r' } },
      },
      expiresAtMs,
    );
    const stored = await item(`run#${executionId}`);
    expect(stored).toEqual({
      pk: `run#${executionId}`,
      s3: `executions/${executionId}/context.json`,
      expires_at: Math.ceil(expiresAtMs / 1000),
    });

    const context = await runs.readContext(executionId);
    expect(context).toMatchObject({ execution_id: executionId, project_id: 'p', user_id: 'u', overrides: { a: { reply: 'r' } } });
    expect(Object.hasOwn(context.input.constructor as object, '__proto__')).toBe(true);
    expect(JSON.stringify(context.input)).toBe(JSON.stringify(input));
    await expect(runs.readContext(randomUUID())).rejects.toThrow('is missing');
  });

  it('stores node outputs per pause, small ones inline, and reads the version the cursor names', async () => {
    const runs = createContextStore(dynamo, localTableName('executions'), values());
    const executionId = randomUUID();
    const expires = Math.ceil(Date.now() / 1000) + 60;
    await runs.writeOutputs(executionId, 1, { a: { output: 'small' } }, expires);
    await runs.writeOutputs(
      executionId,
      2,
      { a: { output: 'small' }, b: { output: 'x'.repeat(EXECUTION_VALUE_INLINE_MAX_BYTES) } },
      expires,
    );
    expect(await item(`outputs#${executionId}#1`)).toMatchObject({ json: '{"a":{"output":"small"}}' });
    expect(await item(`outputs#${executionId}#2`)).toMatchObject({ s3: `executions/${executionId}/outputs-2.json` });
    expect(await runs.readOutputs(executionId, 0)).toEqual({});
    expect(await runs.readOutputs(executionId, 1)).toEqual({ a: { output: 'small' } });
    expect(Object.keys(await runs.readOutputs(executionId, 2))).toEqual(['a', 'b']);
  });

  it('keeps memory under bounded keys with its names, and long turns in S3', async () => {
    const userState = createUserStateRepository(dynamo, localTableName('userState'), values());
    const user = 'ж'.repeat(MAX_CALLER_ID_LENGTH);
    const longName = 'я'.repeat(MAX_MEMORY_KEY_BYTES);
    await userState.writeMemory('p', user, JSON.parse(`{"__proto__":{"a":1},"constructor":"c","${longName}":2}`));
    const memory = await userState.readMemory('p', user);
    expect(Object.getPrototypeOf(memory)).toBeNull();
    expect({ ...memory }).toEqual(JSON.parse(`{"__proto__":{"a":1},"constructor":"c","${longName}":2}`));

    const executionId = randomUUID();
    const long = 't'.repeat(EXECUTION_VALUE_INLINE_MAX_BYTES + 1);
    const at = new Date().toISOString();
    await userState.appendTurn('p', user, 'thread', { role: 'user', text: 'short', execution_id: executionId, at }, 1, Date.now() + 60_000);
    await userState.appendTurn(
      'p',
      user,
      'thread',
      { role: 'assistant', text: long, execution_id: executionId, at },
      2,
      Date.now() + 60_000,
    );
    await userState.appendTurn('p', user, 'thread', { role: 'user', text: 'mine', execution_id: 'current', at }, 1, Date.now() + 60_000);
    const history = await userState.readHistory('p', user, 'thread', 10, { executionId: 'current' });
    expect(history.map((turn) => [turn.role, turn.text])).toEqual([
      ['user', 'short'],
      ['assistant', long],
    ]);
    expect(await object(`executions/${executionId}/turn-2.json`)).toBe(JSON.stringify(long));
  });

  it("reads an execution's history as the thread stood when the execution started: no later run, no later reply", async () => {
    const userState = createUserStateRepository(dynamo, localTableName('userState'), values());
    const thread = `thread-${randomUUID()}`;
    const turn = (executionId: string, role: 'user' | 'assistant', text: string, at: string, sequence: number) =>
      userState.appendTurn('p', 'u', thread, { role, text, execution_id: executionId, at }, sequence, Date.now() + 60_000);
    await turn('earlier', 'user', 'first question', '2026-11-24T10:00:00.000Z', 1);
    await turn('earlier', 'assistant', 'first answer', '2026-11-24T10:00:01.000Z', 2);
    await turn('slow', 'user', 'slow question', '2026-11-24T10:00:02.000Z', 1);
    // The execution whose history this is started at 10:00:03.000; everything after is not its history.
    await turn('current', 'user', 'my question', '2026-11-24T10:00:03.000Z', 1);
    await turn('slow', 'assistant', 'slow answer, after the execution started', '2026-11-24T10:00:04.000Z', 2);
    await turn('later', 'user', 'a later run', '2026-11-24T10:00:05.000Z', 1);
    await turn('later', 'assistant', 'its answer', '2026-11-24T10:00:06.000Z', 2);

    const history = await userState.readHistory('p', 'u', thread, 10, { executionId: 'current', startedAt: '2026-11-24T10:00:03.000Z' });
    expect(history.map((entry) => entry.text)).toEqual(['first question', 'first answer', 'slow question']);
    expect(
      (await userState.readHistory('p', 'u', thread, 2, { executionId: 'current', startedAt: '2026-11-24T10:00:03.000Z' })).map(
        (entry) => entry.text,
      ),
    ).toEqual(['first answer', 'slow question']);
  });
});
