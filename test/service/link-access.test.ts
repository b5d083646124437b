import { describe, expect, it } from 'vitest';
import { openLink, type LinkAccessDeps } from '#inbound/link-access.ts';
import { createLinkCache } from '#inbound/link-cache.ts';
import type { Link } from '#inbound/link-model.ts';
import { emptyCostUnits, runMetered, type Metering } from '#shared/metering/cost-meter.ts';
import { NotFoundError, RateLimitedError, ServiceUnavailableError } from '#shared/errors.ts';
import { LINK_CACHE_MS, MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK, MAX_UNKNOWN_TOKENS_PER_IP, UNKNOWN_TOKEN_WINDOW_MS } from '#shared/limits.ts';
import { hashSecret, newSecret } from '#shared/secrets.ts';
import { ManualClock } from '../support/fakes/clock.ts';
import { InMemoryCounterStore } from '../support/fakes/counter-store.ts';
import { awsError } from '../support/fakes/faults.ts';
import { InMemoryLinkLimits } from '../support/fakes/link-limits.ts';
import { InMemoryLinksRepository } from '../support/fakes/links-repository.ts';

const IP = '198.51.100.7';
const OTHER_IP = '198.51.100.8';

function setup() {
  // 30 s into a minute and into a 10-minute guessing window (12:00:00 UTC starts both).
  const clock = new ManualClock(Date.parse('2025-03-10T12:00:30.000Z'));
  const counters = new InMemoryCounterStore();
  const links = new InMemoryLinksRepository();
  const limits = new InMemoryLinkLimits(counters);
  const deps: LinkAccessDeps = {
    links,
    counters,
    limits,
    countersTable: 'counters-table',
    cache: createLinkCache(LINK_CACHE_MS, 100),
    now: clock.now,
  };
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
  const rateUnits = () => limits.requestsOf(link.link_id);
  const dayUnits = () => counters.keysContaining(link.link_id).reduce((sum, key) => sum + counters.value(key), 0);
  // Past the cache's second, so that each test's state changes are read.
  const later = () => clock.advance(LINK_CACHE_MS);
  return { deps, clock, counters, links, limits, token, link, guesses, rateUnits, dayUnits, later };
}

/** What the handlers do first: open the link its token names (the guessing check for a token that opens none), then admit it. */
async function resolveLink(deps: LinkAccessDeps, token: string, clientIp: string, kind: 'request' | 'event' = 'request') {
  const opened = await openLink(deps, token, clientIp);
  await opened.admit(kind);
  return opened.link;
}

const viewOf = ({ link_id, state, connector_type, source_id, allow_hosts }: Link) => ({
  link_id,
  state,
  connector_type,
  source_id,
  allow_hosts,
});

const unknownToken = () => newSecret('whk_');
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('resolveLink', () => {
  it('answers the link of a known token and counts one request against the link, no guess', async () => {
    const env = setup();
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(viewOf(env.link));
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
    expect(env.links.faults.count('findToken')).toBe(0);
    expect(env.guesses()).toBe(1);
  });

  it('refuses an address’s unknown tokens after its guesses until the window ends, counting no more; other addresses go on', async () => {
    const env = setup();
    for (let i = 0; i < MAX_UNKNOWN_TOKENS_PER_IP; i += 1) {
      expect(await failure(resolveLink(env.deps, unknownToken(), IP))).toBeInstanceOf(NotFoundError);
    }
    const blocked = await failure(resolveLink(env.deps, unknownToken(), IP));
    expect(blocked).toBeInstanceOf(RateLimitedError);
    expect((blocked as RateLimitedError).retryAfterSeconds).toBe(UNKNOWN_TOKEN_WINDOW_MS / 1000 - 30);
    expect(await failure(resolveLink(env.deps, 'whk_short', IP))).toBeInstanceOf(RateLimitedError);
    // A refused guess writes nothing: the count stays at the limit.
    expect(env.guesses()).toBe(MAX_UNKNOWN_TOKENS_PER_IP);
    expect(await failure(resolveLink(env.deps, unknownToken(), OTHER_IP))).toBeInstanceOf(NotFoundError);

    env.clock.advance(UNKNOWN_TOKEN_WINDOW_MS);
    expect(await failure(resolveLink(env.deps, unknownToken(), IP))).toBeInstanceOf(NotFoundError);
  });

  it('serves a valid token from an address that has used its guesses, and never reads or counts its guesses', async () => {
    const env = setup();
    for (let i = 0; i <= MAX_UNKNOWN_TOKENS_PER_IP; i += 1) await failure(resolveLink(env.deps, unknownToken(), IP));
    const reads = env.counters.faults.count('read');

    expect(await resolveLink(env.deps, env.token, IP, 'event')).toEqual(viewOf(env.link));
    env.later();
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(viewOf(env.link));

    expect(env.rateUnits()).toBe(2);
    expect(env.dayUnits()).toBe(1);
    expect(env.counters.faults.count('read')).toBe(reads);
    expect(env.guesses()).toBe(MAX_UNKNOWN_TOKENS_PER_IP);
    // The block still answers the address's next unknown token.
    expect(await failure(resolveLink(env.deps, unknownToken(), IP))).toBeInstanceOf(RateLimitedError);
  });

  it('answers a reissued token until its grace period ends, then 404 counted as a guess', async () => {
    const env = setup();
    const previous = env.token;
    const next = newSecret('whk_');
    await env.links.reissue(env.link, hashSecret(next), next.slice(0, 10), env.clock.iso(), env.clock.now() + 60_000);

    expect((await resolveLink(env.deps, previous, IP)).link_id).toBe(env.link.link_id);
    // The cache never keeps a token past its own deadline.
    env.clock.advance(60_000 - 1);
    expect((await resolveLink(env.deps, previous, IP)).link_id).toBe(env.link.link_id);
    env.clock.advance(1);
    expect(await failure(resolveLink(env.deps, previous, IP))).toBeInstanceOf(NotFoundError);
    expect(env.guesses()).toBe(1);
    expect((await resolveLink(env.deps, next, IP)).link_id).toBe(env.link.link_id);
  });

  it('answers 404 for a revoked link, and the request still counts against the link (nothing is given back)', async () => {
    const env = setup();
    await env.links.revoke(env.link.link_id, env.clock.iso());
    expect(await failure(resolveLink(env.deps, env.token, IP))).toBeInstanceOf(NotFoundError);
    expect(await failure(resolveLink(env.deps, env.token, IP, 'event'))).toBeInstanceOf(NotFoundError);
    expect(env.rateUnits()).toBe(2);
    expect(env.dayUnits()).toBe(0);
    expect(env.guesses()).toBe(0);
    expect(env.counters.faults.count('decrement')).toBe(0);
  });

  it('answers 429 until the minute ends once the link used its requests, without counting past the limit', async () => {
    const env = setup();
    await resolveLink(env.deps, env.token, IP);
    env.limits.fillMinute(env.link.link_id, env.clock.now());
    const filled = env.rateUnits();

    const refused = await failure(resolveLink(env.deps, env.token, IP, 'event'));
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(30);
    expect(env.rateUnits()).toBe(filled);
    expect(env.dayUnits()).toBe(0);
    expect(env.guesses()).toBe(0);

    env.clock.advance(30_000);
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(viewOf(env.link));
    expect(env.rateUnits()).toBe(filled + 1);
  });
});

describe('openLink: one read per token, and a second of memory', () => {
  it('reads the token item alone, its copy of the link, and then answers from memory for a second', async () => {
    const env = setup();
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(viewOf(env.link));
    expect(await resolveLink(env.deps, env.token, IP, 'event')).toEqual(viewOf(env.link));
    expect(env.links.faults.count('findToken')).toBe(1);
    expect(env.links.faults.count('getLink')).toBe(0);
    // A token that opens a link has nothing to do with the guessing counter.
    expect(env.counters.faults.count('read')).toBe(0);
    expect(env.rateUnits()).toBe(2);
    expect(env.dayUnits()).toBe(1);
    env.later();
    await resolveLink(env.deps, env.token, IP);
    expect(env.links.faults.count('findToken')).toBe(2);
  });

  it('reads the token again halfway through the second, beside the limits, so a busy link never waits for a read', async () => {
    const env = setup();
    await resolveLink(env.deps, env.token, IP);
    env.clock.advance(LINK_CACHE_MS / 2);
    // One request refreshes; the one beside it goes on from memory.
    await Promise.all([resolveLink(env.deps, env.token, IP, 'event'), resolveLink(env.deps, env.token, IP)]);
    expect(env.links.faults.count('findToken')).toBe(2);
    expect(env.counters.faults.count('read')).toBe(0);
    // The refreshed copy holds past the first read's second: the link opens from memory, with no read of its own.
    env.clock.advance(LINK_CACHE_MS / 2 + 1);
    await openLink(env.deps, env.token, IP);
    expect(env.links.faults.count('findToken')).toBe(2);
    expect(env.dayUnits()).toBe(1);
  });

  it('answers 404 when the refresh finds the link revoked, and gives the day unit back', async () => {
    const env = setup();
    await resolveLink(env.deps, env.token, IP);
    await env.links.revoke(env.link.link_id, env.clock.iso());
    env.clock.advance(LINK_CACHE_MS / 2);
    expect(await failure(resolveLink(env.deps, env.token, IP, 'event'))).toBeInstanceOf(NotFoundError);
    expect(env.dayUnits()).toBe(0);
    expect(await failure(resolveLink(env.deps, env.token, IP))).toBeInstanceOf(NotFoundError);
  });

  it('takes a revocation within the second: the copy says revoked once the cached link is old enough', async () => {
    const env = setup();
    await resolveLink(env.deps, env.token, IP);
    await env.links.revoke(env.link.link_id, env.clock.iso());
    env.clock.advance(LINK_CACHE_MS / 2 - 1);
    expect((await resolveLink(env.deps, env.token, IP)).state).toBe('bound');
    env.clock.advance(LINK_CACHE_MS / 2 + 1);
    expect(await failure(resolveLink(env.deps, env.token, IP))).toBeInstanceOf(NotFoundError);
    expect(env.links.faults.count('getLink')).toBe(0);
  });

  it('asks the link item when the copy says issued (a bind not yet copied) or when the token item has no copy', async () => {
    const env = setup();
    env.links.tokens.get(env.link.current_token_hash)!.state = 'issued';
    expect((await resolveLink(env.deps, env.token, IP)).state).toBe('bound');
    env.later();
    env.links.tokens.set(env.link.current_token_hash, { link_id: env.link.link_id });
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(viewOf(env.link));
    expect(env.links.faults.count('getLink')).toBe(2);
  });

  it('does not keep an issued link in memory: its bind is seen at once', async () => {
    const env = setup();
    const token = newSecret('whk_');
    const issued: Link = { ...env.link, link_id: 'lnk_2', state: 'issued', source_id: undefined, current_token_hash: hashSecret(token) };
    await env.links.createLink(issued);
    expect((await resolveLink(env.deps, token, IP)).state).toBe('issued');
    await env.links.bind('lnk_2', 'src_2', env.clock.iso());
    expect(await resolveLink(env.deps, token, IP)).toMatchObject({ state: 'bound', source_id: 'src_2' });
    // The issued copy asked the link item; the bound one, copied by the bind, answers alone.
    expect(env.links.faults.count('getLink')).toBe(1);
  });

  it('answers 503 when the refresh cannot read the token, and gives back the day unit its event took with the usage it billed', async () => {
    const env = setup();
    await resolveLink(env.deps, env.token, IP);
    env.clock.advance(LINK_CACHE_MS / 2);
    env.links.faults.failNext('findToken', awsError('ThrottlingException'));
    const metering: Metering = { units: emptyCostUnits(), startedAtMs: performance.now(), memoryMb: 256 };
    const refused = await runMetered(metering, () =>
      failure(openLink(env.deps, env.token, IP).then((opened) => opened.admit('event', { dynamoWriteUnits: 2, webhookEvents: 1 }))),
    );
    expect(refused).toBeInstanceOf(ServiceUnavailableError);
    expect(env.dayUnits()).toBe(0);
    // The give-back takes back the event and its put, billed in advance, in its own update: no correction write follows.
    expect(env.limits.givenBack).toHaveLength(1);
    expect(env.limits.givenBack[0]?.units).toMatchObject({ webhookEvents: -1, dynamoWriteUnits: -2 });
    expect(metering.written).toMatchObject({ webhookEvents: 0 });
  });

  it('answers over quota with the request counted and no day unit taken', async () => {
    const env = setup();
    const opened = await openLink(env.deps, env.token, IP);
    env.counters.set(`quota#${env.link.link_id}#${env.clock.iso().slice(0, 10)}`, MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK);
    expect((await opened.admit('event')).admission).toBe('overQuota');
    expect(env.rateUnits()).toBe(1);
    expect(env.dayUnits()).toBe(MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK);
  });

  it('passes a failed limits update on', async () => {
    const env = setup();
    await resolveLink(env.deps, env.token, IP);
    const throttled = awsError('ThrottlingException');
    const failingLimits = { ...env.deps, limits: { take: () => Promise.reject(throttled) } };
    expect(await failure(resolveLink(failingLimits, env.token, IP, 'event'))).toBe(throttled);
  });

  it('serves a valid token from memory even when the guessing counter cannot be read', async () => {
    const env = setup();
    await resolveLink(env.deps, env.token, IP);
    env.counters.faults.failNext('read', awsError('ThrottlingException'));
    expect(await resolveLink(env.deps, env.token, IP, 'event')).toEqual(viewOf(env.link));
  });
});

describe('resolveLink: the token checks fail closed', () => {
  it('answers 503, not 404 or the link, when the token cannot be read', async () => {
    const env = setup();
    const throttled = awsError('ProvisionedThroughputExceededException');
    env.links.faults.failNext('findToken', throttled, 2);
    for (const token of [env.token, unknownToken()]) {
      const error = await failure(resolveLink(env.deps, token, IP));
      expect(error).toBeInstanceOf(ServiceUnavailableError);
      expect((error as ServiceUnavailableError).statusCode).toBe(503);
      expect((error as Error).cause).toBe(throttled);
    }
    expect(env.counters.counters.size).toBe(0);
  });

  it('passes a 503 of the token read through unchanged', async () => {
    const env = setup();
    const busy = new ServiceUnavailableError('busy');
    env.links.faults.failNext('findToken', busy);
    expect(await failure(resolveLink(env.deps, env.token, IP))).toBe(busy);
  });

  it('answers 503 for an unknown or malformed token when its guesses cannot be read or counted; a valid token is served', async () => {
    const env = setup();
    env.counters.faults.failNext('read', awsError('ThrottlingException'));
    expect(await failure(resolveLink(env.deps, 'not-a-token', IP))).toBeInstanceOf(ServiceUnavailableError);
    env.counters.faults.failNext('read', awsError('ThrottlingException'));
    expect(await failure(resolveLink(env.deps, unknownToken(), IP))).toBeInstanceOf(ServiceUnavailableError);
    env.counters.faults.failNext('increment', awsError('ThrottlingException'));
    expect(await failure(resolveLink(env.deps, unknownToken(), IP))).toBeInstanceOf(ServiceUnavailableError);
    expect(env.guesses()).toBe(0);
    env.counters.faults.failNext('read', awsError('ThrottlingException'));
    expect(await resolveLink(env.deps, env.token, IP)).toEqual(viewOf(env.link));
  });
});
