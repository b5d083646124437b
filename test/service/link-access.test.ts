import { describe, expect, it } from 'vitest';
import { resolveLink, type LinkAccessDeps } from '#inbound/link-access.ts';
import type { Link } from '#inbound/link-model.ts';
import { BatchIncompleteError, NotFoundError, RateLimitedError, ServiceUnavailableError } from '#shared/errors.ts';
import { MAX_REQUESTS_PER_MINUTE_PER_LINK, MAX_UNKNOWN_TOKENS_PER_IP, UNKNOWN_TOKEN_WINDOW_MS } from '#shared/limits.ts';
import { hashSecret, newSecret } from '#shared/secrets.ts';
import { ManualClock } from '../support/fakes/clock.ts';
import { InMemoryCounterStore } from '../support/fakes/counter-store.ts';
import { awsError } from '../support/fakes/faults.ts';
import { InMemoryLinksRepository } from '../support/fakes/links-repository.ts';

const IP = '198.51.100.7';
const OTHER_IP = '198.51.100.8';

function setup() {
  // 30 s into a minute and into a 10-minute guessing window (12:00:00 UTC starts both).
  const clock = new ManualClock(Date.parse('2025-03-10T12:00:30.000Z'));
  const counters = new InMemoryCounterStore();
  const links = new InMemoryLinksRepository(counters, 'counters-table');
  const deps: LinkAccessDeps = { links, counters, countersTable: 'counters-table', now: clock.now };
  const token = newSecret('whk_');
  const link: Link = {
    link_id: 'lnk_1',
    state: 'bound',
    connector_type: 'calls',
    source_id: 'src_1',
    allow_hosts: [],
    token_prefix: token.slice(0, 10),
    current_token_hash: hashSecret(token),
    created_at: '2025-03-01T00:00:00.000Z',
  };
  links.seed(link);
  const guesses = (ip = IP) => counters.keysContaining(ip).reduce((sum, key) => sum + counters.value(key), 0);
  const rateUnits = () => counters.keysContaining(link.link_id).reduce((sum, key) => sum + counters.value(key), 0);
  return { deps, clock, counters, links, token, link, guesses, rateUnits };
}

const unknownToken = () => newSecret('whk_');
const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);

describe('resolveLink', () => {
  it('answers the link of a known token and counts one request against the link, no guess', async () => {
    const env = setup();
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(env.link);
    expect(env.rateUnits()).toBe(1);
    expect(env.guesses()).toBe(0);
  });

  it('answers 404 for an unknown token and counts a guess for the address', async () => {
    const env = setup();
    expect(await failure(resolveLink(env.deps, unknownToken(), IP))).toBeInstanceOf(NotFoundError);
    expect(env.guesses()).toBe(1);
    expect(env.rateUnits()).toBe(0);
  });

  it('does not look a malformed token up, but counts it as a guess', async () => {
    const env = setup();
    expect(await failure(resolveLink(env.deps, 'whk_short', IP))).toBeInstanceOf(NotFoundError);
    expect(env.links.faults.count('findTokenWithGuard')).toBe(0);
    expect(env.guesses()).toBe(1);
  });

  it('blocks an address after its guesses, even for a valid token, until the window ends; other addresses go on', async () => {
    const env = setup();
    for (let i = 0; i < MAX_UNKNOWN_TOKENS_PER_IP; i += 1) {
      expect(await failure(resolveLink(env.deps, unknownToken(), IP))).toBeInstanceOf(NotFoundError);
    }
    const blocked = await failure(resolveLink(env.deps, unknownToken(), IP));
    expect(blocked).toBeInstanceOf(RateLimitedError);
    expect((blocked as RateLimitedError).retryAfterSeconds).toBe(UNKNOWN_TOKEN_WINDOW_MS / 1000 - 30);

    // A blocked address learns nothing, not even that a token is right; the link's rate is not touched.
    expect(await failure(resolveLink(env.deps, env.token, IP))).toBeInstanceOf(RateLimitedError);
    expect(env.rateUnits()).toBe(0);
    expect(await resolveLink(env.deps, env.token, OTHER_IP)).toEqual(env.link);

    env.clock.advance(UNKNOWN_TOKEN_WINDOW_MS);
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(env.link);
  });

  it('answers a reissued token until its grace period ends, then 404 counted as a guess', async () => {
    const env = setup();
    const previous = env.token;
    const next = newSecret('whk_');
    await env.links.reissue(env.link.link_id, hashSecret(next), next.slice(0, 10), env.clock.iso(), env.clock.now() + 60_000);

    expect((await resolveLink(env.deps, previous, IP)).link_id).toBe(env.link.link_id);
    env.clock.advance(60_000);
    expect(await failure(resolveLink(env.deps, previous, IP))).toBeInstanceOf(NotFoundError);
    expect(env.guesses()).toBe(1);
    expect((await resolveLink(env.deps, next, IP)).link_id).toBe(env.link.link_id);
  });

  it('answers 404 for a revoked link, and the request still counts against the link (nothing is given back)', async () => {
    const env = setup();
    await env.links.revoke(env.link.link_id, env.clock.iso());
    expect(await failure(resolveLink(env.deps, env.token, IP))).toBeInstanceOf(NotFoundError);
    expect(await failure(resolveLink(env.deps, env.token, IP))).toBeInstanceOf(NotFoundError);
    expect(env.rateUnits()).toBe(2);
    expect(env.guesses()).toBe(0);
    expect(env.counters.faults.count('decrement')).toBe(0);
  });

  it('answers 429 until the minute ends once the link used its requests, without counting past the limit', async () => {
    const env = setup();
    await resolveLink(env.deps, env.token, IP);
    const [rateKey] = env.counters.keysContaining(env.link.link_id);
    env.counters.set(rateKey!, MAX_REQUESTS_PER_MINUTE_PER_LINK);

    const refused = await failure(resolveLink(env.deps, env.token, IP));
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(30);
    expect(env.counters.value(rateKey!)).toBe(MAX_REQUESTS_PER_MINUTE_PER_LINK);
    expect(env.guesses()).toBe(0);

    env.clock.advance(30_000);
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(env.link);
    expect(env.counters.keysContaining(env.link.link_id)).toHaveLength(2);
  });
});

describe('resolveLink: the guessing protection fails closed', () => {
  it('answers 503, not 404 or the link, when the token and guard cannot be read', async () => {
    const env = setup();
    const throttled = awsError('ProvisionedThroughputExceededException');
    env.links.faults.failNext('findTokenWithGuard', throttled, 2);
    for (const token of [env.token, unknownToken()]) {
      const error = await failure(resolveLink(env.deps, token, IP));
      expect(error).toBeInstanceOf(ServiceUnavailableError);
      expect((error as ServiceUnavailableError).statusCode).toBe(503);
      expect((error as Error).cause).toBe(throttled);
    }
    expect(env.counters.counters.size).toBe(0);
  });

  it('passes the batch read’s own 503 through unchanged', async () => {
    const env = setup();
    const incomplete = new BatchIncompleteError('BatchGetItem', 1, 6);
    env.links.faults.failNext('findTokenWithGuard', incomplete);
    expect(await failure(resolveLink(env.deps, env.token, IP))).toBe(incomplete);
  });

  it('answers 503 for a malformed token when the guard cannot be read, and when a guess cannot be counted', async () => {
    const env = setup();
    env.counters.faults.failNext('read', awsError('ThrottlingException'));
    expect(await failure(resolveLink(env.deps, 'not-a-token', IP))).toBeInstanceOf(ServiceUnavailableError);
    env.counters.faults.failNext('increment', awsError('ThrottlingException'));
    expect(await failure(resolveLink(env.deps, unknownToken(), IP))).toBeInstanceOf(ServiceUnavailableError);
    expect(env.guesses()).toBe(0);
  });

  it('reads the guard from the configured counters table', async () => {
    const env = setup();
    const error = await failure(resolveLink({ ...env.deps, countersTable: 'another-table' }, env.token, IP));
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(((error as Error).cause as Error).name).toBe('ResourceNotFoundException');
  });
});
