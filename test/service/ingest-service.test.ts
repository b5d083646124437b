import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ingestEvent, type IngestDeps } from '#inbound/ingest-service.ts';
import type { Link } from '#inbound/link-model.ts';
import type { OpenedLink } from '#inbound/link-access.ts';
import { InMemoryLinkLimits } from '../support/fakes/link-limits.ts';
import { ConflictError, RateLimitedError, ValidationError } from '#shared/errors.ts';
import { MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK } from '#shared/limits.ts';
import { textEvent } from '../support/events.ts';
import { InMemoryBodyStore } from '../support/fakes/body-store.ts';
import { ManualClock } from '../support/fakes/clock.ts';
import { InMemoryCounterStore } from '../support/fakes/counter-store.ts';
import { InMemoryEventsRepository } from '../support/fakes/events-repository.ts';
import { awsError } from '../support/fakes/faults.ts';
import { InMemoryLinksRepository } from '../support/fakes/links-repository.ts';

const SOURCE = 'src_1';
const LINK: Link = {
  link_id: 'lnk_1',
  state: 'bound',
  connector_type: 'dialogs',
  source_id: SOURCE,
  allow_hosts: [],
  token_prefix: 'whk_abcdef',
  current_token_hash: 'hash-of-token',
  created_at: '2025-03-01T00:00:00.000Z',
  bound_at: '2025-03-01T00:01:00.000Z',
};

function setup() {
  // Noon UTC: the daily quota's window ends 12 hours later.
  const clock = new ManualClock(Date.parse('2025-03-10T12:00:00.000Z'));
  const counters = new InMemoryCounterStore();
  const links = new InMemoryLinksRepository();
  const events = new InMemoryEventsRepository();
  const bodies = new InMemoryBodyStore();
  let lastId = 0;
  const ids = { failNext: undefined as Error | undefined };
  const deps: IngestDeps = {
    links,
    events,
    bodies,
    now: clock.now,
    allowLoopbackRecordings: false,
    nextEventId: async () => {
      const error = ids.failNext;
      ids.failNext = undefined;
      if (error) throw error;
      return ++lastId;
    },
  };
  links.seed(LINK);
  /** The link's daily quota counter; there must be exactly one counter for the link. */
  const quota = () => {
    const keys = counters.keysContaining(LINK.link_id);
    expect(keys).toHaveLength(1);
    return counters.value(keys[0]!);
  };
  const limits = new InMemoryLinkLimits(counters);
  /** The link as the handler opens it; the guessing check is link-access's (test/service/link-access.test.ts). */
  // A copy, as each request's link is its own read (a function's memory may add filter values to it).
  const open = (link: Link): OpenedLink => ({
    link: structuredClone(link),
    tokenHash: link.current_token_hash,
    admit: async (kind) => {
      const ticket = await limits.take(link.link_id, link.state === 'bound' ? kind : 'request', clock.now());
      if (ticket.admission === 'rateLimited') throw ticket.minute.refuse();
      return ticket;
    },
  });
  return { deps, clock, counters, links, events, bodies, ids, quota, limits, open };
}

const bodyOf = (event: unknown) => Buffer.from(JSON.stringify(event));
/** A dialog whose gzip is far over the 16 KB kept inline: random text does not compress. */
const largeDialog = (externalId?: string) =>
  textEvent(1, {
    ...(externalId ? { external_id: externalId } : {}),
    messages: Array.from({ length: 30 }, (_, i) => ({
      text: randomBytes(1024).toString('base64'),
      timestamp: new Date(Date.now() - 60_000 + i).toISOString(),
      author_name: 'Client Bob',
      author_role: 'client',
    })),
  });

describe('ingestEvent', () => {
  it('accepts a small event inline and takes one unit of the daily quota', async () => {
    const env = setup();
    const event = textEvent(3);
    const outcome = await ingestEvent(env.deps, env.open(LINK), bodyOf(event));

    expect(outcome).toEqual({ status: 'accepted', external_id: event.external_id, event_id: 1, messages: 3 });
    const stored = env.events.stored(SOURCE, event.external_id)!;
    expect(stored).toMatchObject({ event_id: 1, state: 'queued', received_at: env.clock.iso(), body_s3_key: undefined });
    expect(gunzipSync(stored.body_gzip!).toString()).toBe(JSON.stringify(event));
    expect(env.bodies.faults.count('put')).toBe(0);
    expect(env.quota()).toBe(1);
    expect([...env.links.links.get(LINK.link_id)!.channel_values!]).toEqual(['telegram']);
  });

  it('keeps a large body in S3 and points the event at it', async () => {
    const env = setup();
    const event = largeDialog();
    await ingestEvent(env.deps, env.open(LINK), bodyOf(event));

    const stored = env.events.stored(SOURCE, event.external_id)!;
    expect(stored.body_gzip).toBeUndefined();
    expect(stored.body_s3_key).toBe(`inbound/${SOURCE}/1.json.gz`);
    const object = env.bodies.objects.get(stored.body_s3_key!)!;
    expect(object.contentEncoding).toBe('gzip');
    expect(gunzipSync(object.body).toString()).toBe(JSON.stringify(event));
  });
});

describe('ingestEvent: duplicates', () => {
  it('deletes the S3 body it stored for a duplicate, keeps the original, and gives the quota unit back', async () => {
    const env = setup();
    const event = largeDialog();
    await ingestEvent(env.deps, env.open(LINK), bodyOf(event));
    const original = env.events.stored(SOURCE, event.external_id)!;

    // The same external_id again, even with another body: the first one stays.
    env.clock.advance(1_000);
    const outcome = await ingestEvent(env.deps, env.open(LINK), bodyOf(largeDialog(event.external_id)));

    expect(outcome).toEqual({ status: 'duplicate', external_id: event.external_id, event_id: 1 });
    expect(env.bodies.faults.count('put')).toBe(2);
    expect(env.bodies.deleted).toEqual([`inbound/${SOURCE}/2.json.gz`]);
    expect([...env.bodies.objects.keys()]).toEqual([original.body_s3_key]);
    expect(env.events.stored(SOURCE, event.external_id)).toEqual(original);
    expect(env.counters.faults.count('decrement')).toBe(1);
    expect(env.quota()).toBe(1);
  });

  it('answers a small duplicate without touching S3, and gives the quota unit back', async () => {
    const env = setup();
    const event = textEvent(2);
    await ingestEvent(env.deps, env.open(LINK), bodyOf(event));
    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(event))).toEqual({
      status: 'duplicate',
      external_id: event.external_id,
      event_id: 1,
    });
    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(event))).toEqual({
      status: 'duplicate',
      external_id: event.external_id,
      event_id: 1,
    });

    expect(env.bodies.faults.count('put') + env.bodies.faults.count('delete')).toBe(0);
    expect(env.events.ofSource(SOURCE)).toHaveLength(1);
    expect(env.quota()).toBe(1);
  });

  it('accepts an external_id again once its earlier event expired', async () => {
    const env = setup();
    const event = textEvent(1);
    await ingestEvent(env.deps, env.open(LINK), bodyOf(event));
    const expiresAt = env.events.stored(SOURCE, event.external_id)!.expires_at;
    env.clock.set(expiresAt * 1000);
    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(event))).toMatchObject({ status: 'accepted', event_id: 2 });
    expect(env.events.stored(SOURCE, event.external_id)!.event_id).toBe(2);
  });

  it('answers the duplicate even when its S3 body cannot be deleted, and gives the quota unit back', async () => {
    const env = setup();
    const event = largeDialog();
    await ingestEvent(env.deps, env.open(LINK), bodyOf(event));
    env.bodies.faults.failNext('delete', awsError('SlowDown'));

    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(event))).toEqual({
      status: 'duplicate',
      external_id: event.external_id,
      event_id: 1,
    });
    expect(env.quota()).toBe(1);
    // The duplicate's object stays behind; the bucket's lifecycle rule for inbound/ removes it.
    expect([...env.bodies.objects.keys()].sort()).toEqual([`inbound/${SOURCE}/1.json.gz`, `inbound/${SOURCE}/2.json.gz`]);
  });
});

describe('ingestEvent: the quota', () => {
  it.each([
    [
      'the S3 body cannot be stored',
      (env: ReturnType<typeof setup>) => env.bodies.faults.failNext('put', awsError('SlowDown')),
      'SlowDown',
    ],
    [
      'the event cannot be written',
      (env: ReturnType<typeof setup>) => env.events.faults.failNext('putIfNew', awsError('ProvisionedThroughputExceededException')),
      'ProvisionedThroughputExceededException',
    ],
  ] as const)('gives the unit back when %s', async (_label, fail, name) => {
    const env = setup();
    fail(env);
    const event = largeDialog();
    await expect(ingestEvent(env.deps, env.open(LINK), bodyOf(event))).rejects.toMatchObject({ name });
    expect(env.quota()).toBe(0);
    expect(env.events.ofSource(SOURCE)).toEqual([]);
    // Retried, the same event is accepted and counted once.
    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(event))).toMatchObject({ status: 'accepted' });
    expect(env.quota()).toBe(1);
  });

  it('takes no unit and counts no request when no event id can be allocated (the item is built before admission)', async () => {
    const env = setup();
    env.ids.failNext = awsError('ThrottlingException');
    const event = largeDialog();
    await expect(ingestEvent(env.deps, env.open(LINK), bodyOf(event))).rejects.toMatchObject({ name: 'ThrottlingException' });
    expect(env.counters.keysContaining(LINK.link_id)).toEqual([]);
    expect(env.limits.requestsOf(LINK.link_id)).toBe(0);
    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(event))).toMatchObject({ status: 'accepted' });
    expect(env.quota()).toBe(1);
  });

  it('leaves the S3 body behind when the event write fails after it (for the bucket lifecycle to remove)', async () => {
    const env = setup();
    env.events.faults.failNext('putIfNew', awsError('ProvisionedThroughputExceededException'));
    await expect(ingestEvent(env.deps, env.open(LINK), bodyOf(largeDialog()))).rejects.toThrow();
    expect([...env.bodies.objects.keys()]).toEqual([`inbound/${SOURCE}/1.json.gz`]);
    expect(env.bodies.deleted).toEqual([]);
  });

  it('refuses a new event with 429 until the end of the UTC day once the quota is used, and takes nothing', async () => {
    const env = setup();
    const earlier = textEvent(1);
    await ingestEvent(env.deps, env.open(LINK), bodyOf(earlier));
    const [quotaKey] = env.counters.keysContaining(LINK.link_id);
    env.counters.set(quotaKey!, MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK);

    const error = await ingestEvent(env.deps, env.open(LINK), bodyOf(textEvent(1))).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterSeconds).toBe(12 * 60 * 60);
    expect(env.events.ofSource(SOURCE)).toHaveLength(1);
    expect(env.quota()).toBe(MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK);
    expect(env.counters.faults.count('decrement')).toBe(0);

    // A duplicate still gets its answer (not 429), and does not touch the used-up quota.
    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(earlier))).toEqual({
      status: 'duplicate',
      external_id: earlier.external_id,
      event_id: 1,
    });
    expect(env.quota()).toBe(MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK);

    // The next UTC day has a quota of its own.
    env.clock.set(Date.parse('2025-03-11T00:00:00.000Z'));
    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(textEvent(1)))).toMatchObject({ status: 'accepted' });
    expect(env.counters.keysContaining(LINK.link_id)).toHaveLength(2);
  });

  it('takes no unit for a link without a source or an invalid event', async () => {
    const env = setup();
    const issued: Link = { ...LINK, state: 'issued', source_id: undefined };
    await expect(ingestEvent(env.deps, env.open(issued), bodyOf(textEvent(1)))).rejects.toBeInstanceOf(ConflictError);
    await expect(ingestEvent(env.deps, env.open(LINK), bodyOf({ type: 'text' }))).rejects.toBeInstanceOf(ValidationError);
    await expect(ingestEvent(env.deps, env.open(LINK), Buffer.from([0xff, 0xfe]))).rejects.toBeInstanceOf(ValidationError);
    expect(env.counters.counters.size).toBe(0);
    expect(env.events.items.size).toBe(0);
    // Each still counts as a request against the link's minute: every request counts.
    expect(env.limits.requestsOf(LINK.link_id)).toBe(3);
  });

  it('keeps an accepted event accepted when its filter values cannot be remembered', async () => {
    const env = setup();
    env.links.faults.failNext('addFilterValues', awsError('ThrottlingException'));
    expect(await ingestEvent(env.deps, env.open(LINK), bodyOf(textEvent(1)))).toMatchObject({ status: 'accepted' });
    expect(env.quota()).toBe(1);
    expect(env.links.links.get(LINK.link_id)!.channel_values).toBeUndefined();
  });
});
