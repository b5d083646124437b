import { randomUUID } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { HANDOFF_READS_IN_FLIGHT } from '#shared/limits.ts';
import { recordCost } from '#shared/metering/cost-meter.ts';
import type { NormalizedConversation } from './conversation.ts';

/**
 * The hand-off to the analysis platform: the normalized conversation as JSON at `handoff/<source_id>/<event_id>.json`
 * (the same key whichever sweep writes it, so a repeated write changes nothing), then an announcement naming it.
 */
const HANDOFF_PREFIX = 'handoff/';
export const HANDOFF_EVENT_SOURCE = 'workflow-ingest-platform.collection';
export const HANDOFF_DETAIL_TYPE = 'Conversation handed off';
export const handoffKey = (conversation: Pick<NormalizedConversation, 'source_id' | 'event_id'>) =>
  `${HANDOFF_PREFIX}${conversation.source_id}/${conversation.event_id}.json`;

/** What each announcement says: where the conversation is, and enough to route it without reading it. */
export interface HandoffAnnouncement {
  bucket: string;
  key: string;
  event_id: number;
  external_id: string;
  source_id: string;
  link_id: string;
  type: NormalizedConversation['type'];
}

/**
 * What EventBridge bills for one announcement: a custom event per 64 KB chunk of its PutEvents entry, sized as
 * EventBridge sizes it (Source, DetailType and Detail as UTF-8; the entry names no Time or Resources). Locally the
 * announcement goes to a file, and is metered the same.
 */
export function putEventsChunks(announcement: HandoffAnnouncement): number {
  const size = [HANDOFF_EVENT_SOURCE, HANDOFF_DETAIL_TYPE, JSON.stringify(announcement)].reduce(
    (sum, part) => sum + Buffer.byteLength(part, 'utf8'),
    0,
  );
  return Math.max(1, Math.ceil(size / (64 * 1024)));
}

export interface Announcer {
  announce(announcement: HandoffAnnouncement): Promise<void>;
}

/**
 * The conversation as JSON, its metadata as the sender wrote it (`metadataJson`, the source text): parsed and written
 * again, a number past double precision would be rounded. A marker no sender can know holds its place.
 */
export function conversationJson(conversation: NormalizedConversation, metadataJson?: string): string {
  if (metadataJson === undefined || conversation.metadata === null) return JSON.stringify(conversation);
  const marker = `\u0000${randomUUID()}`;
  return JSON.stringify({ ...conversation, metadata: marker }).replace(JSON.stringify(marker), () => metadataJson);
}

/** A hand-off as stored: its event id and the conversation's JSON text. */
export interface StoredHandoff {
  event_id: number;
  text: string;
}

export function createHandoffStore(s3: S3Client, bucket: string, announcer: Announcer) {
  return {
    /** `metadataJson`: the metadata's source text in the body as received, written as it is. */
    async handOff(conversation: NormalizedConversation, metadataJson?: string): Promise<void> {
      const key = handoffKey(conversation);
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: conversationJson(conversation, metadataJson),
          ContentType: 'application/json',
        }),
      );
      const announcement: HandoffAnnouncement = {
        bucket,
        key,
        event_id: conversation.event_id,
        external_id: conversation.external_id,
        source_id: conversation.source_id,
        link_id: conversation.link_id,
        type: conversation.type,
      };
      await announcer.announce(announcement);
      recordCost({ eventBridgeEvents: putEventsChunks(announcement) });
    },

    /**
     * Every conversation handed off for a source, oldest event first (the operator's `handoffs` listing), as the text
     * stored: parsed and written again, the sender's metadata numbers past double precision would be rounded. The keys
     * are listed page by page and kept as event ids only (8 bytes each); conversations are read at most
     * HANDOFF_READS_IN_FLIGHT ahead of the caller, so however many a source has, about that many are held at a time.
     */
    async *read(sourceId: string): AsyncGenerator<StoredHandoff> {
      const eventIds = await listEventIds(sourceId);
      const reading: Promise<StoredHandoff>[] = [];
      let next = 0;
      while (next < eventIds.length || reading.length > 0) {
        while (reading.length < HANDOFF_READS_IN_FLIGHT && next < eventIds.length) {
          const pending = readOne(sourceId, eventIds[next++]!);
          // Awaited in its turn below; failing while an earlier one is awaited, it is not unhandled.
          pending.catch(() => undefined);
          reading.push(pending);
        }
        yield await reading.shift()!;
      }
    },
  };

  /** The source's hand-offs' event ids, ascending: S3 lists keys in text order (`10.json` before `9.json`). */
  async function listEventIds(sourceId: string): Promise<number[]> {
    const prefix = `${HANDOFF_PREFIX}${sourceId}/`;
    const eventIds: number[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      for (const { Key: key } of page.Contents ?? []) {
        const name = /^(0|[1-9][0-9]*)\.json$/.exec(key!.slice(prefix.length));
        const eventId = Number(name?.[1]);
        // Only handOff writes here; an object it could not have written is no hand-off to pass on as one.
        if (!name || !Number.isSafeInteger(eventId)) throw new Error(`${key} is not a hand-off: its name is not <event_id>.json`);
        eventIds.push(eventId);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return eventIds.sort((a, b) => a - b);
  }

  async function readOne(sourceId: string, eventId: number): Promise<StoredHandoff> {
    const key = handoffKey({ source_id: sourceId, event_id: eventId });
    const text = await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();
    // Parsed to be sure the text is JSON before anyone splices it.
    try {
      JSON.parse(text);
    } catch {
      throw new Error(`${key} does not hold a conversation's JSON`);
    }
    return { event_id: eventId, text };
  }
}

/** Locally, announcements are JSON lines appended to a file under DATA_DIR (on AWS: EventBridge, on the stack's bus). */
export function fileAnnouncer(path: string): Announcer {
  return {
    async announce(announcement) {
      await appendFile(
        path,
        `${JSON.stringify({ source: HANDOFF_EVENT_SOURCE, 'detail-type': HANDOFF_DETAIL_TYPE, detail: announcement })}\n`,
      );
    },
  };
}
