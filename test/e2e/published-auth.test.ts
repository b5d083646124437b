import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { SCOPES } from '#shared/access.ts';
import { hashSecret } from '#shared/secrets.ts';
import { MAX_REQUESTS_PER_MINUTE_PER_KEY } from '#shared/limits.ts';
import { MINUTE_MS } from '#shared/time.ts';
import { http } from '../support/http.ts';
import { createExpiredKey, createKey, publishFixtures, publishedClient } from '../support/published.ts';
import { refusedAdmin, startTestTwin, type TestTwin } from '../support/local-twin.ts';

let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
  await publishFixtures(twin);
});
afterAll(() => twin?.close());

/** The routes that take a key: all of the published API's but its OpenAPI document, which is public. */
const publishedRoutes = routes.filter((route) => route.errorShape === 'published' && route.scope !== undefined);
const UNKNOWN_EXECUTION = '00000000-0000-4000-8000-000000000000';

/** Calls a route as the route table describes it; path ids name things that do not exist, so an authorised call answers 404. */
function callRoute(key: string | undefined, route: (typeof routes)[number]) {
  const path = route.path
    .replace('/api/v1/published', '')
    .replace('{workflow_id}', 'no-such-workflow')
    .replace('{execution_id}', UNKNOWN_EXECUTION);
  const startsRun = route.method === 'POST' && (path.endsWith('/execute') || path.endsWith('/stream'));
  const body = route.method === 'POST' ? (startsRun ? { user_id: 'u1' } : {}) : undefined;
  // The stream probe holds its response 2 s by default; a probe that holds nothing says the same about the key.
  return publishedClient(twin, key).call(route.method, route.id === 'PublishedStreamProbe' ? `${path}?hold_ms=0` : path, body);
}

/** Ends a rotated-away key's grace period now, as 24 hours would: moves its stored end into the past. */
async function endGracePeriod(key: string) {
  await twin.dynamo.send(
    new UpdateCommand({
      TableName: twin.twin.tables.apiKeys,
      Key: { pk: `key#${hashSecret(key)}` },
      UpdateExpression: 'SET valid_until_ms = :past',
      ConditionExpression: 'attribute_exists(valid_until_ms)',
      ExpressionAttributeValues: { ':past': Date.now() - 1000 },
    }),
  );
}

/** What an authorised call of `callRoute` answers: the list and the stream probe exist, everything it names does not. */
const authorisedStatus = (route: (typeof routes)[number]) =>
  route.id === 'PublishedListWorkflows' || route.id === 'PublishedStreamProbe' ? 200 : 404;

/** The per-key rate window: the UTC minute, numbered as the counter key names it (`key-rate#<key id>#<minute>`). */
const minuteOf = (epochMs: number) => Math.floor(epochMs / MINUTE_MS);
/** Room a measurement needs inside one minute (a counter write and a few requests take well under a second). */
const MEASUREMENT_ROOM_MS = 5_000;

/**
 * Runs `measure` so that everything it does falls in one rate window, and answers its result: starts in a fresh
 * minute when the current one is about to end, and measures once more if the minute turned over anyway (a
 * stalled machine). Never answers a measurement that straddled two minutes, so the test always asserts.
 */
async function withinOneMinute<T>(measure: (minute: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    const msLeft = MINUTE_MS - (Date.now() % MINUTE_MS);
    if (msLeft < MEASUREMENT_ROOM_MS) await new Promise((resolve) => setTimeout(resolve, msLeft + 50));
    const minute = minuteOf(Date.now());
    const result = await measure(minute);
    if (minuteOf(Date.now()) === minute) return result;
  }
  throw new Error('The minute turned over during both measurements; the machine is too slow for this test');
}

/** A test that calls every route several times over: about 15 s on a quiet machine, more beside a benchmark. */
const EVERY_ROUTE_TIMEOUT_MS = 120_000;

describe('authentication on every endpoint', () => {
  it('covers every route of the published API', () => {
    expect(publishedRoutes.map((route) => route.scope).sort()).toEqual([
      'events.subscribe',
      'executions.approve',
      'executions.read',
      'executions.reject',
      'executions.stop',
      'workflows.execute',
      'workflows.read',
      'workflows.read',
      'workflows.read',
      'workflows.stream',
      'workflows.stream',
    ]);
  });

  it(
    'answers 401 with detail for a missing header, a malformed header, an unknown key, an expired key and a revoked key',
    async () => {
      const expired = await createExpiredKey('full');
      const revoked = await createKey(twin, 'full');
      await twin.admin('keys', 'revoke', revoked.keyId);
      const rotatedAway = await createKey(twin, 'full');
      const replacement = await twin.admin('keys', 'rotate', rotatedAway.keyId);
      await endGracePeriod(rotatedAway.key);
      for (const route of publishedRoutes) {
        for (const [label, key] of [
          ['missing', undefined],
          ['unknown', 'wfk_not-a-real-key'],
          ['expired', expired.key],
          ['revoked', revoked.key],
          ['rotated, grace over', rotatedAway.key],
        ] as const) {
          const response = await callRoute(key, route);
          expect(response.status, `${route.id} ${label}`).toBe(401);
          expect(typeof response.body.detail, `${route.id} ${label}`).toBe('string');
        }
        expect((await callRoute(replacement.key, route)).status, `${route.id} replacement key`).toBe(authorisedStatus(route));
      }
      for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', `bearer  ${'x'}`, '']) {
        const malformed = await http(`${twin.url}/api/v1/published/workflows`, { headers: { authorization } });
        expect(malformed.status, authorization).toBe(401);
      }
      const basic = await twin.admin('keys', 'list');
      const states = Object.fromEntries(basic.keys.map((key: any) => [key.key_id, key.state]));
      expect(states[expired.keyId]).toBe('expired');
      expect(states[revoked.keyId]).toBe('revoked');
      expect(JSON.stringify(basic)).not.toContain(revoked.key);
    },
    EVERY_ROUTE_TIMEOUT_MS,
  );

  it(
    'answers 403 when the key lacks the route scope and lets * and the matching scope through',
    async () => {
      for (const route of publishedRoutes) {
        const others = SCOPES.filter((scope) => scope !== route.scope);
        const lacking = await createKey(twin, others);
        const denied = await callRoute(lacking.key, route);
        expect(denied.status, route.id).toBe(403);
        expect(denied.body.detail).toContain(route.scope);

        const exact = await createKey(twin, [route.scope!]);
        expect((await callRoute(exact.key, route)).status, route.id).toBe(authorisedStatus(route));
      }
      const full = await createKey(twin, ['*']);
      for (const route of publishedRoutes) expect((await callRoute(full.key, route)).status, route.id).toBe(authorisedStatus(route));
    },
    EVERY_ROUTE_TIMEOUT_MS,
  );

  it('gives each preset its scopes: read cannot run or stop, execute runs but cannot approve', async () => {
    const read = await createKey(twin, 'read');
    const execute = await createKey(twin, 'execute');
    const client = (key: string) => publishedClient(twin, key);
    expect((await client(read.key).listWorkflows()).status).toBe(200);
    expect((await client(read.key).execute('echo', { user_id: 'u' })).status).toBe(403);
    expect((await client(read.key).stop(UNKNOWN_EXECUTION)).status).toBe(403);
    expect((await client(execute.key).execute('echo', { user_id: 'u', input: { message: 'x' } })).status).toBe(200);
    expect((await client(execute.key).approve(UNKNOWN_EXECUTION, {})).status).toBe(403);
  });

  it(
    'keeps a rotated key working on every endpoint through its grace period, and refuses it after',
    async () => {
      const original = await createKey(twin, 'read');
      const sentAt = Date.now();
      const rotated = await twin.admin('keys', 'rotate', original.keyId);
      const answeredAt = Date.now();
      expect(rotated.key_id).toBe(original.keyId);
      expect(rotated.key).not.toBe(original.key);
      expect(rotated.scopes).toEqual(['workflows.read', 'executions.read', 'events.subscribe']);
      // 24 hours from the rotation, which happened somewhere between sending and answering, however slow the machine.
      const validUntil = Date.parse(rotated.previous_valid_until);
      expect(validUntil).toBeGreaterThanOrEqual(sentAt + 24 * 3600_000);
      expect(validUntil).toBeLessThanOrEqual(answeredAt + 24 * 3600_000);
      const listed = async () => (await twin.admin('keys', 'list')).keys.find((key: { key_id: string }) => key.key_id === original.keyId);
      const recordKey = { pk: `keyid#${original.keyId}` };
      const stored = await twin.dynamo.send(new GetCommand({ TableName: twin.twin.tables.apiKeys, Key: recordKey }));
      expect(stored.Item).toMatchObject({ previous_valid_until_iso: rotated.previous_valid_until });
      expect((await listed()).previous_valid_until).toBe(rotated.previous_valid_until);
      // A record rotated before time fields named their unit is still listed with its grace period.
      await twin.dynamo.send(
        new UpdateCommand({
          TableName: twin.twin.tables.apiKeys,
          Key: recordKey,
          UpdateExpression: 'SET previous_valid_until = :until REMOVE previous_valid_until_iso',
          ExpressionAttributeValues: { ':until': rotated.previous_valid_until },
        }),
      );
      expect((await listed()).previous_valid_until).toBe(rotated.previous_valid_until);

      // The old value keeps its scopes: same answers as the new one on every endpoint (403 where read lacks the scope).
      for (const route of publishedRoutes) {
        const oldAnswer = (await callRoute(original.key, route)).status;
        expect(oldAnswer, `${route.id} old key in grace`).toBe((await callRoute(rotated.key, route)).status);
        expect(oldAnswer).not.toBe(401);
      }
      expect((await publishedClient(twin, rotated.key).listWorkflows()).status).toBe(200);

      await endGracePeriod(original.key);
      const late = await publishedClient(twin, original.key).listWorkflows();
      expect(late.status).toBe(401);
      expect(late.body.detail).toContain('rotated');
      expect((await publishedClient(twin, rotated.key).listWorkflows()).status).toBe(200);

      await twin.admin('keys', 'revoke', original.keyId);
      expect((await publishedClient(twin, rotated.key).listWorkflows()).status).toBe(401);
    },
    EVERY_ROUTE_TIMEOUT_MS,
  );

  it('keeps each rotated-away value its own 24 hours: a second rotation does not cut the first off, and revoking ends them all', async () => {
    const first = await createKey(twin, 'read');
    const second = await twin.admin('keys', 'rotate', first.keyId);
    const third = await twin.admin('keys', 'rotate', first.keyId);
    const status = async (key: string) => (await publishedClient(twin, key).listWorkflows()).status;
    expect([await status(first.key), await status(second.key), await status(third.key)]).toEqual([200, 200, 200]);

    await endGracePeriod(first.key);
    expect([await status(first.key), await status(second.key), await status(third.key)]).toEqual([401, 200, 200]);

    // A third rotation carries on the values still in their grace, so that a revocation can find them.
    const fourth = await twin.admin('keys', 'rotate', first.keyId);
    const stored = await twin.dynamo.send(new GetCommand({ TableName: twin.twin.tables.apiKeys, Key: { pk: `keyid#${first.keyId}` } }));
    expect(stored.Item!.retired_key_hashes.map((entry: { hash: string }) => entry.hash)).toEqual(
      expect.arrayContaining([hashSecret(second.key), hashSecret(third.key)]),
    );
    expect([await status(second.key), await status(third.key), await status(fourth.key)]).toEqual([200, 200, 200]);

    await twin.admin('keys', 'revoke', first.keyId);
    expect([await status(second.key), await status(third.key), await status(fourth.key)]).toEqual([401, 401, 401]);
  });

  it('refuses to rotate an expired key: expiry ends a key for good, and a new value would be dead on arrival', async () => {
    const expired = await createExpiredKey('full');
    expect(await refusedAdmin('keys', 'rotate', expired.keyId)).toEqual({ exitCode: 1, error: `API key ${expired.keyId} is expired` });
    expect((await publishedClient(twin, expired.key).listWorkflows()).status).toBe(401);
  });

  it("isolates projects: another project's workflows and executions answer 404", async () => {
    await publishFixtures(twin, 'other');
    const mine = await createKey(twin, 'full');
    const theirs = await createKey(twin, 'full', { project: 'other' });
    const run = await publishedClient(twin, theirs.key).execute('echo', { user_id: 'u', input: { message: 'secret' } });
    expect(run.status).toBe(200);
    const id = run.body.execution_id;
    expect((await publishedClient(twin, theirs.key).getExecution(id)).status).toBe(200);
    for (const call of [
      () => publishedClient(twin, mine.key).getExecution(id),
      () => publishedClient(twin, mine.key).stop(id),
      () => publishedClient(twin, mine.key).approve(id, {}),
      () => publishedClient(twin, mine.key).reject(id, {}),
    ]) {
      const response = await call();
      expect(response.status).toBe(404);
      expect(response.text).not.toContain('secret');
    }
    const list = await publishedClient(twin, theirs.key).listWorkflows();
    expect(list.body.project_id).toBe('other');
  });

  it('answers 429 with an integer Retry-After once a key used its requests of the minute', async () => {
    const limited = await createKey(twin, 'read');
    const other = await createKey(twin, 'read');
    const { response, otherStatus, endMs, sentAt, answeredAt } = await withinOneMinute(async (minute) => {
      await twin.dynamo.send(
        new PutCommand({
          TableName: twin.twin.tables.counters,
          Item: {
            pk: `key-rate#${limited.keyId}#${minute}`,
            count: MAX_REQUESTS_PER_MINUTE_PER_KEY,
            expires_at: Math.ceil(Date.now() / 1000) + 120,
          },
        }),
      );
      const sentAt = Date.now();
      const response = await publishedClient(twin, limited.key).listWorkflows();
      const answeredAt = Date.now();
      // Another key's requests are counted apart, in the same minute.
      const otherStatus = (await publishedClient(twin, other.key).listWorkflows()).status;
      return { response, otherStatus, endMs: (minute + 1) * MINUTE_MS, sentAt, answeredAt };
    });
    expect(response.status).toBe(429);
    expect(response.headers['retry-after']).toMatch(/^\d+$/);
    // Until the end of the minute the request fell in, in whole seconds, at least 1.
    const retryAfter = Number(response.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, Math.floor((endMs - answeredAt) / 1000)));
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((endMs - sentAt) / 1000));
    expect(typeof response.body.detail).toBe('string');
    expect(otherStatus).toBe(200);
  });
});
