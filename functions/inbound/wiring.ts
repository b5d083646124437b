import type { BodyStore } from '#shared/store/body-store.ts';
import { dynamo } from '#shared/clients/dynamodb.ts';
import { optionalFlag, requireEnv } from '#shared/config.ts';
import { TABLE_ENV } from '#shared/resources.ts';
import { createCounterStore } from '#shared/store/counter-store.ts';
import { createIdAllocator } from './id-allocator.ts';
import { EVENT_ID_BLOCK_SIZE, LINK_CACHE_ENTRIES, LINK_CACHE_MS } from '#shared/limits.ts';
import { createLinkCache } from './link-cache.ts';
import { createLinkLimits } from './link-limits.ts';
import { createEventsRepository } from './events-repository.ts';
import type { IngestDeps } from './ingest-service.ts';
import type { LinkAccessDeps } from './link-access.ts';
import { createLinksRepository } from './links-repository.ts';

/**
 * Builds the inbound domain's dependencies from a function's environment. Each factory reads only
 * the variables its functions are given, so a missing one fails at cold start.
 */
export function linkAccessFromEnv(): LinkAccessDeps {
  const countersTable = requireEnv('COUNTERS_TABLE');
  return {
    links: createLinksRepository(dynamo, requireEnv('LINKS_TABLE')),
    counters: createCounterStore(dynamo, countersTable),
    limits: createLinkLimits(dynamo, requireEnv(TABLE_ENV.usage)),
    countersTable,
    cache: createLinkCache(LINK_CACHE_MS, LINK_CACHE_ENTRIES),
    now: Date.now,
  };
}

export function ingestFromEnv(access: LinkAccessDeps): IngestDeps {
  return {
    links: access.links,
    events: createEventsRepository(dynamo, requireEnv('INBOUND_EVENTS_TABLE')),
    bodies: bodiesFromEnv(),
    nextEventId: createIdAllocator(dynamo, access.countersTable, 'inbound-event-id', EVENT_ID_BLOCK_SIZE),
    now: Date.now,
    allowLoopbackRecordings: optionalFlag('ALLOW_LOOPBACK_RECORDINGS'),
  };
}

/**
 * Bodies whose gzip passes the inline limit go to S3. Most events are far smaller, so the S3 client (~130 KB) is
 * loaded with the first large body, not at every cold start.
 */
function bodiesFromEnv(): BodyStore {
  const bucket = requireEnv('BODIES_BUCKET');
  let store: Promise<BodyStore> | undefined;
  const load = () =>
    (store ??= Promise.all([import('#shared/clients/s3.ts'), import('#shared/store/body-store.ts')]).then(([{ s3 }, { createBodyStore }]) =>
      createBodyStore(s3, bucket),
    ));
  return {
    put: async (key, body, encoding) => (await load()).put(key, body, encoding),
    get: async (key) => (await load()).get(key),
    delete: async (key) => (await load()).delete(key),
  };
}
