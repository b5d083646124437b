import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MEMORY_KEY_BYTES } from '#shared/limits.ts';
import { createKey, publishFixtures, publishedClient } from '../support/published.ts';
import { startTestTwin, type TestTwin } from '../support/local-twin.ts';

/** What a hostile caller of the Published Workflow API tries: prototype names as keys, huge path ids, odd URLs. */
let twin: TestTwin;
let client: ReturnType<typeof publishedClient>;
beforeAll(async () => {
  twin = await startTestTwin();
  await publishFixtures(twin);
  client = publishedClient(twin, (await createKey(twin, 'full')).key);
});
afterAll(() => twin?.close());

/** Bodies are written as JSON text: in an object literal `__proto__` would set the prototype, JSON.parse makes it an own key. */
const PROTOTYPE_NAMES = ['constructor', 'hasOwnProperty', 'toString', 'valueOf', 'prototype', '__proto__'];

async function executionCount(): Promise<number> {
  const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.executions }));
  return Items?.length ?? 0;
}

describe('overrides naming prototype properties', () => {
  it.each(PROTOTYPE_NAMES)('answers 400 naming overrides.%s and starts nothing', async (name) => {
    const before = await executionCount();
    const response = await client.execute('echo', `{"user_id":"u","overrides":{"${name}":{"reply":"x"}}}`);

    expect(response.status).toBe(400);
    expect(response.body.detail).toContain(`overrides.${name}: workflow echo has no node ${name}`);
    expect(await executionCount()).toBe(before);
  });

  it.each(PROTOTYPE_NAMES)('answers 400 naming overrides.answer.%s for a parameter of that name', async (name) => {
    const response = await client.execute('echo', `{"user_id":"u","overrides":{"answer":{"${name}":"x"}}}`);

    expect(response.status).toBe(400);
    expect(response.body.detail).toContain(`overrides.answer.${name}: not a parameter of this llm node`);
  });
});

describe('caller ids that are not well-formed Unicode', () => {
  it.each(['user_id', 'thread_id'])('answers 400 naming %s for a lone surrogate, and starts nothing', async (field) => {
    const before = await executionCount();
    // JSON text: the escape reaches the handler as a lone surrogate, which no DynamoDB key may hold.
    const ids = field === 'user_id' ? '"user_id":"u\\udc00"' : '"user_id":"u","thread_id":"t\\ud800"';
    const response = await client.execute('echo', `{${ids},"input":{"message":"hi"},"initial_memory":{"a":1}}`);

    expect(response.status).toBe(400);
    expect(response.body.detail).toContain(`${field}: must be well-formed Unicode`);
    expect(await executionCount()).toBe(before);
  });
});

describe('caller text that is not well-formed Unicode, anywhere in the body', () => {
  it.each([
    ['input.message', '"input":{"message":"hi \\ud800"}'],
    ['input.nested.0', '"input":{"message":"hi","nested":["\\udfff"]}'],
    ['initial_memory.name', '"initial_memory":{"name":"\\ud800"}'],
    ['initial_memory.k\ufffd', '"initial_memory":{"k\\ud800":1}'],
    ['callback_url', '"callback_url":"https://example.com/\\ud800"'],
  ])('answers 400 naming %s, and starts nothing', async (field, fields) => {
    const before = await executionCount();
    const response = await client.execute('echo', `{"user_id":"u-lone",${fields}}`);

    expect(response.status).toBe(400);
    expect(response.body.detail).toContain(`${field}: `);
    expect(response.body.detail).toContain('well-formed Unicode (no lone surrogate)');
    expect(response.text).not.toMatch(/\\ud[89a-f]/i);
    expect(await executionCount()).toBe(before);
  });

  it.each(['approve', 'reject'] as const)(
    'answers %s with feedback holding a lone surrogate 400 naming feedback, and decides nothing',
    async (decision) => {
      const waiting = await client.execute('gate', { user_id: 'u-lone-feedback', input: { message: 'deploy' } });
      expect(waiting.body.status).toBe('interrupted');

      const response = await client[decision](waiting.body.execution_id, '{"feedback":"\\ud800"}');

      expect(response.status).toBe(400);
      expect(response.body).toEqual({ detail: 'Validation error: feedback: must be well-formed Unicode (no lone surrogate)' });
      expect((await client.getExecution(waiting.body.execution_id)).body.status).toBe('interrupted');
    },
  );
});

describe('bodies that are not UTF-8', () => {
  it('answers 400 on the body and starts nothing: a message is never run altered to U+FFFD', async () => {
    const before = await executionCount();
    const body = Buffer.concat([Buffer.from('{"user_id":"u","input":{"message":"h'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')]);
    const response = await client.execute('echo', body);

    expect(response.status).toBe(400);
    expect(response.body.detail).toContain('body: is not valid JSON');
    expect(await executionCount()).toBe(before);
  });
});

describe('bodies nested past any real input', () => {
  const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

  it.each(['input', 'initial_memory', 'overrides'])(
    'answers 400 on the body for %s nested 20,000 levels deep (a 40 KB body), and starts and writes nothing',
    async (field) => {
      const before = await executionCount();
      const userId = `deep-${field}`;
      const value = field === 'input' ? `{"x":${nested(20_000)}}` : `{"k":${nested(20_000)}}`;
      const response = await client.execute('memory', `{"user_id":"${userId}","initial_memory":{"name":"Zed"},"${field}":${value}}`);

      expect(response.status).toBe(400);
      expect(response.body.detail).toContain('body: must not nest objects and arrays more than 64 levels deep');
      expect(await executionCount()).toBe(before);
      const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.userState }));
      expect(Items!.filter((item) => JSON.stringify(item).includes(userId))).toEqual([]);
    },
  );

  it('runs an input nested 60 levels deep', async () => {
    const response = await client.execute('echo', `{"user_id":"u","input":{"message":"hi","x":${nested(60)}}}`);
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('completed');
  });
});

describe('input and initial_memory keys naming prototype properties', () => {
  it('runs with every such key in input, at the top and nested, and keeps them', async () => {
    const keys = PROTOTYPE_NAMES.map((name) => `"${name}":"v-${name}"`).join(',');
    const response = await client.execute('echo', `{"user_id":"u-proto","input":{"message":"hi",${keys},"nested":{${keys}}}}`);

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'completed', output: 'Echo: hi' });
  });

  it('stores initial_memory keys named like prototype properties as they are, values included', async () => {
    const keys = PROTOTYPE_NAMES.map((name) => `"${name}":{"${name}":"v-${name}"}`).join(',');
    const response = await client.execute('memory', `{"user_id":"u-memory-proto","initial_memory":{${keys},"name":"Ann"}}`);

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'completed' });
    expect(response.body.output.reply).toContain('Hello Ann');
    const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.userState }));
    const names = (Items ?? []).filter((item) => String(item.sk).startsWith('key#')).map((item) => String(item.sk).slice(4));
    expect(names).toEqual(expect.arrayContaining([...PROTOTYPE_NAMES, 'name']));
  });

  it(`refuses an initial_memory key over ${MAX_MEMORY_KEY_BYTES} bytes of UTF-8 with 400 naming it, and writes no memory`, async () => {
    const longKey = 'я'.repeat(MAX_MEMORY_KEY_BYTES / 2 + 1); // within 256 characters, over 256 bytes
    const response = await client.execute('echo', { user_id: 'u-long-key', initial_memory: { [longKey]: 1, short: 2 } });

    expect(response.status).toBe(400);
    expect(response.body.detail).toContain(`initial_memory.${longKey}`);
    expect(response.body.detail).toContain(`at most ${MAX_MEMORY_KEY_BYTES} bytes`);
    const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables.userState }));
    expect((Items ?? []).some((item) => String(item.sk) === 'key#short')).toBe(false);
  });

  it(`accepts an initial_memory key of exactly ${MAX_MEMORY_KEY_BYTES} bytes`, async () => {
    const key = 'я'.repeat(MAX_MEMORY_KEY_BYTES / 2);
    const response = await client.execute('echo', { user_id: 'u-long-key-ok', initial_memory: { [key]: 1 } });
    expect(response.status).toBe(200);
  });
});

describe('path ids longer than any real id', () => {
  // Past DynamoDB's key sizes once prefixed (`workflow#…` sort key 1,024 bytes, `execution#…` partition key 2,048 bytes).
  const longWorkflowId = 'w'.repeat(1100);
  const longExecutionId = 'e'.repeat(2100);

  it('answers 404 for a workflow id of over 1,000 bytes on read and execute', async () => {
    const read = await client.getWorkflow(longWorkflowId);
    expect(read.status).toBe(404);
    expect(read.body).toEqual({ detail: 'Workflow not found' });
    const before = await executionCount();
    const run = await client.execute(longWorkflowId, { user_id: 'u' });
    expect(run.status).toBe(404);
    expect(await executionCount()).toBe(before);
  });

  it('answers 404 for an execution id of over 2,000 bytes on every execution route', async () => {
    for (const response of [
      await client.getExecution(longExecutionId),
      await client.stop(longExecutionId),
      await client.approve(longExecutionId, { feedback: 'ok' }),
      await client.reject(longExecutionId, { feedback: 'no' }),
    ]) {
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ detail: 'Execution not found' });
    }
  });

  it('answers 404 for ids with characters no id has', async () => {
    expect((await client.getWorkflow('echo%20x')).status).toBe(404);
    expect((await client.getExecution('a.b')).status).toBe(404);
  });
});

describe('callback URLs', () => {
  it('refuses a callback_url with a backslash (another parser reads the host as 127.0.0.1) with 400, and starts nothing', async () => {
    const before = await executionCount();
    const response = await client.execute('echo', { user_id: 'u', callback_url: 'https://evil.com\\@127.0.0.1/x' });

    expect(response.status).toBe(400);
    expect(response.body.detail).toContain('callback_url: must not contain backslashes');
    expect(await executionCount()).toBe(before);
  });
});
