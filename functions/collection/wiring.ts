import { dynamo } from '#shared/clients/dynamodb.ts';
import { s3 } from '#shared/clients/s3.ts';
import { sfn } from '#shared/clients/sfn.ts';
import { createBodyStore } from '#shared/store/body-store.ts';
import { optionalFlag, requireEnv, shortenedMilliseconds } from '#shared/config.ts';
import { RECORDING_TRANSFER_TIMEOUT_MS } from '#shared/limits.ts';
import { BUCKET_ENV, COLLECTION_STATE_MACHINE_ENV, TABLE_ENV } from '#shared/resources.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { createCollectionRepository } from './collection-repository.ts';
import type { CollectionDeps } from './collection-service.ts';
import { createCollectionSweeps } from './collection-sweeps.ts';
import { createHandoffStore, fileAnnouncer, type Announcer } from './handoff-store.ts';
import { createQueueRepository } from './queue-repository.ts';
import { createRecordingFetcher } from './recording-fetcher.ts';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Where hand-offs are announced: the stack's bus on AWS (`HANDOFF_BUS_NAME`), a JSON-lines file under DATA_DIR on
 * the twin (`HANDOFF_EVENTS_FILE`). Exactly one is set; neither is a configuration error.
 */
function announcerFromEnv(): Announcer {
  const bus = process.env.HANDOFF_BUS_NAME;
  if (!bus) return fileAnnouncer(requireEnv('HANDOFF_EVENTS_FILE'));
  // The EventBridge client loads with the first hand-off, not at cold start: a sweep with nothing to hand off never needs it.
  let announcer: Promise<Announcer> | undefined;
  const loaded = () =>
    (announcer ??= Promise.all([import('#shared/clients/eventbridge.ts'), import('./eventbridge-announcer.ts')]).then(
      ([{ eventBridge }, { eventBridgeAnnouncer }]) => eventBridgeAnnouncer(eventBridge, bus),
    ));
  return { announce: async (announcement) => (await loaded()).announce(announcement) };
}

/** CollectBatch: the queue, the tasks and their sweeps, the link, the bucket (bodies, recordings, hand-offs), the announcer. */
export function collectionFromEnv(): CollectionDeps {
  const bucket = requireEnv(BUCKET_ENV.bodies);
  return {
    tasks: createCollectionRepository(dynamo, requireEnv(TABLE_ENV.collection)),
    links: createLinksRepository(dynamo, requireEnv(TABLE_ENV.links)),
    queue: createQueueRepository(dynamo, requireEnv(TABLE_ENV.inboundEvents)),
    bodies: createBodyStore(s3, bucket),
    // Test-only, never set by CDK: lets a local https recording server on loopback through.
    recordings: createRecordingFetcher(s3, bucket, {
      allowLoopback: optionalFlag('ALLOW_LOOPBACK_RECORDINGS'),
      // Tests shorten the 2-minute transfer limit; it can never be set longer.
      timeoutMs: shortenedMilliseconds('RECORDING_TIMEOUT_MS', RECORDING_TRANSFER_TIMEOUT_MS),
    }),
    handoffs: createHandoffStore(s3, bucket, announcerFromEnv()),
    now: Date.now,
    sleep,
  };
}

/** The nightly trigger: lists the tasks and starts their sweeps on the collection state machine. */
export function nightlyFromEnv() {
  return {
    tasks: createCollectionRepository(dynamo, requireEnv(TABLE_ENV.collection)),
    sweeps: createCollectionSweeps(sfn, requireEnv(COLLECTION_STATE_MACHINE_ENV)),
    now: Date.now,
  };
}
