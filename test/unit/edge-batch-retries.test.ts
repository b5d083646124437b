import { BatchGetCommand, BatchWriteCommand, GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { openLink, type LinkAccessDeps } from '#inbound/link-access.ts';
import { createLinkCache } from '#inbound/link-cache.ts';
import { createLinkLimits } from '#inbound/link-limits.ts';

/** A webhook request's first steps: the link its token names, then its admission (the guessing check and the limits). */
async function resolveLink(deps: LinkAccessDeps, token: string, clientIp: string) {
  const opened = await openLink(deps, token, clientIp);
  await opened.admit('request');
  return opened.link;
}
import { createLinksRepository } from '#inbound/links-repository.ts';
import { batchGet } from '#shared/store/batch-get.ts';
import { batchPut } from '#shared/store/batch-put.ts';
import { fullJitterDelay } from '#shared/store/batch-retry.ts';
import { createCounterStore } from '#shared/store/counter-store.ts';
import { BatchIncompleteError, ServiceUnavailableError } from '#shared/errors.ts';
import { errorResponse } from '#shared/http/http-errors.ts';
import { BATCH_MAX_ATTEMPTS, BATCH_RETRY_BASE_MS, BATCH_RETRY_MAX_DELAY_MS, MAX_UNKNOWN_TOKENS_PER_IP } from '#shared/limits.ts';
import { hashSecret } from '#shared/secrets.ts';

/**
 * Service-level tests of the batch retries with a fake SDK client that leaves items unprocessed, as DynamoDB
 * does under throttling (the local stand-in never does, so e2e tests cannot show it), and of the webhook's token checks
 * over a fake client that throttles.
 */
type Command = { input: any; constructor: { name: string } };

function fakeClient(answer: (command: Command, call: number) => unknown) {
  const calls: Command[] = [];
  const client = {
    send: async (command: Command) => {
      calls.push(command);
      const result = answer(command, calls.length);
      if (result instanceof Error) throw result;
      return result;
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, calls };
}

function recordingSleep() {
  const pauses: number[] = [];
  return { pauses, sleep: async (ms: number) => void pauses.push(ms) };
}

const items = (n: number) => Array.from({ length: n }, (_, i) => ({ pk: `item#${i}` }));

describe('full jitter', () => {
  it('draws each pause from [0, min(cap, base × 2^retry))', () => {
    expect(fullJitterDelay(0, { random: () => 0 })).toBe(0);
    expect(fullJitterDelay(0, { random: () => 0.999 })).toBe(Math.floor(0.999 * BATCH_RETRY_BASE_MS));
    expect(fullJitterDelay(3, { random: () => 0.5 })).toBe(Math.floor(0.5 * BATCH_RETRY_BASE_MS * 8));
    expect(fullJitterDelay(30, { random: () => 0.999 })).toBeLessThan(BATCH_RETRY_MAX_DELAY_MS);
  });
});

describe('batchPut', () => {
  it('sends unprocessed items again, with growing jittered pauses, until every item is written once', async () => {
    const written: string[] = [];
    const { client, calls } = fakeClient((command, call) => {
      const requests = command.input.RequestItems.things as { PutRequest: { Item: { pk: string } } }[];
      // The first two answers leave the last two items of the request unprocessed.
      const kept = call <= 2 ? requests.slice(0, -2) : requests;
      written.push(...kept.map((request) => request.PutRequest.Item.pk));
      return { UnprocessedItems: call <= 2 ? { things: requests.slice(-2) } : {} };
    });
    const { pauses, sleep } = recordingSleep();

    await batchPut(client, 'things', items(30), { sleep, random: () => 0.999 });

    expect(calls.every((command) => command instanceof BatchWriteCommand)).toBe(true);
    expect(calls.map((command) => command.input.RequestItems.things.length)).toEqual([25, 2, 2, 5]);
    expect(written.sort()).toEqual(
      items(30)
        .map((item) => item.pk)
        .sort(),
    );
    expect(pauses).toEqual([Math.floor(0.999 * BATCH_RETRY_BASE_MS), Math.floor(0.999 * BATCH_RETRY_BASE_MS * 2)]);
  });

  it(`throws BatchIncompleteError (503) after ${BATCH_MAX_ATTEMPTS} attempts when items stay unprocessed`, async () => {
    // The first answer writes one item; every later one writes nothing.
    const { client, calls } = fakeClient((command, call) => ({
      UnprocessedItems: { things: command.input.RequestItems.things.slice(call === 1 ? 1 : 0) },
    }));
    const { pauses, sleep } = recordingSleep();

    const failure = await batchPut(client, 'things', items(3), { sleep }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(BatchIncompleteError);
    expect(failure).toBeInstanceOf(ServiceUnavailableError);
    expect((failure as BatchIncompleteError).unprocessed).toBe(2);
    expect(calls).toHaveLength(BATCH_MAX_ATTEMPTS);
    expect(pauses).toHaveLength(BATCH_MAX_ATTEMPTS - 1);
    expect(errorResponse(failure, 'published')).toMatchObject({ statusCode: 503, headers: { 'retry-after': '1' } });
    expect(JSON.parse(errorResponse(failure, 'webhook').body)).toEqual({ error: expect.stringContaining('retry later') });
  });
});

describe('batchGet', () => {
  it('asks unprocessed keys again and answers every table’s items together', async () => {
    const { client, calls } = fakeClient((_, call) =>
      call === 1
        ? { Responses: { a: [{ pk: 'a1' }] }, UnprocessedKeys: { a: { Keys: [{ pk: 'a2' }] }, b: { Keys: [{ pk: 'b1' }] } } }
        : call === 2
          ? { Responses: { b: [{ pk: 'b1' }] }, UnprocessedKeys: { a: { Keys: [{ pk: 'a2' }] } } }
          : { Responses: { a: [{ pk: 'a2' }] }, UnprocessedKeys: {} },
    );
    const { pauses, sleep } = recordingSleep();

    const responses = await batchGet(client, { a: { Keys: [{ pk: 'a1' }, { pk: 'a2' }] }, b: { Keys: [{ pk: 'b1' }] } }, { sleep });

    expect(calls.every((command) => command instanceof BatchGetCommand)).toBe(true);
    expect(calls[1]!.input.RequestItems).toEqual({ a: { Keys: [{ pk: 'a2' }] }, b: { Keys: [{ pk: 'b1' }] } });
    expect(calls[2]!.input.RequestItems).toEqual({ a: { Keys: [{ pk: 'a2' }] } });
    expect(responses.get('a')).toEqual([{ pk: 'a1' }, { pk: 'a2' }]);
    expect(responses.get('b')).toEqual([{ pk: 'b1' }]);
    expect(pauses).toHaveLength(2);
  });
});

describe('token checks fail closed, over the real repository and counter store', () => {
  const token = `whk_${'A'.repeat(43)}`;
  const linkItem = { pk: `token#${hashSecret(token)}`, link_id: 'lnk_1', state: 'bound', connector_type: 'calls', source_id: 'src_1' };
  const throttled = () => Object.assign(new Error('Throughput exceeds the current capacity'), { name: 'ThrottlingException' });

  /** A links table holding `token` when `tokenKnown`, a counters table whose reads throttle when `guardThrottled`. */
  function webhookStores(options: { tokenKnown: boolean; guardThrottled?: boolean; guessCount?: number }) {
    const fake = fakeClient((command) => {
      if (command instanceof GetCommand && command.input.TableName === 'links') return { Item: options.tokenKnown ? linkItem : undefined };
      if (command instanceof GetCommand && command.input.TableName === 'counters') {
        if (options.guardThrottled) return throttled();
        return { Item: options.guessCount === undefined ? undefined : { pk: 'guard', count: options.guessCount } };
      }
      if (command instanceof UpdateCommand) return { Attributes: { count: (options.guessCount ?? 0) + 1 } };
      throw new Error(`unexpected ${command.constructor.name}`);
    });
    const deps: LinkAccessDeps = {
      links: createLinksRepository(fake.client, 'links'),
      counters: createCounterStore(fake.client, 'counters'),
      limits: createLinkLimits(fake.client, 'usage'),
      countersTable: 'counters',
      cache: createLinkCache(0, 1),
      now: () => Date.parse('2026-11-01T10:00:00Z'),
    };
    return { deps, calls: fake.calls };
  }
  const countersCalls = (calls: Command[]) => calls.filter((command) => command.input.TableName === 'counters');

  it('refuses an unknown token with 503 when its guesses cannot be read, counting nothing', async () => {
    const { deps, calls } = webhookStores({ tokenKnown: false, guardThrottled: true });

    const failure = await resolveLink(deps, token, '203.0.113.7').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(ServiceUnavailableError);
    expect(errorResponse(failure, 'webhook').statusCode).toBe(503);
    expect(((failure as Error).cause as Error).name).toBe('ThrottlingException');
    expect(calls.some((command) => command instanceof UpdateCommand)).toBe(false);
  });

  it('serves a valid token without reading its address’s guesses, so a throttled counter never refuses it', async () => {
    const { deps, calls } = webhookStores({ tokenKnown: true, guardThrottled: true });
    await expect(resolveLink(deps, token, '203.0.113.7')).resolves.toMatchObject({ link_id: 'lnk_1', state: 'bound' });
    expect(countersCalls(calls)).toEqual([]);
  });

  it('answers a blocked address’s unknown token 429 with Retry-After, writing nothing', async () => {
    const { deps, calls } = webhookStores({ tokenKnown: false, guessCount: MAX_UNKNOWN_TOKENS_PER_IP });

    const failure = await resolveLink(deps, token, '203.0.113.7').catch((error: unknown) => error);

    expect(errorResponse(failure, 'webhook').statusCode).toBe(429);
    expect(errorResponse(failure, 'webhook').headers?.['retry-after']).toMatch(/^\d+$/);
    expect(calls.some((command) => command instanceof UpdateCommand)).toBe(false);
  });

  it('refuses with 503 when the guard read of a malformed token fails', async () => {
    const fake = fakeClient(throttled);
    const deps: LinkAccessDeps = {
      links: createLinksRepository(fake.client, 'links'),
      counters: createCounterStore(fake.client, 'counters'),
      limits: createLinkLimits(fake.client, 'counters'),
      countersTable: 'counters',
      cache: createLinkCache(0, 1),
      now: Date.now,
    };

    const failure = await resolveLink(deps, 'not-a-token', '203.0.113.7').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(ServiceUnavailableError);
    expect(((failure as Error).cause as Error).name).toBe('ThrottlingException');
  });
});
