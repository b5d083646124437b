import { randomUUID } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { recordCost } from '#shared/metering/cost-meter.ts';
import type { NormalizedConversation } from './conversation.ts';

/**
 * The hand-off to the analysis platform: the normalized conversation as JSON at `handoff/<source_id>/<event_id>.json`
 * (the same key whichever sweep writes it, so a repeated write changes nothing), then an announcement naming it.
 */
export const HANDOFF_PREFIX = 'handoff/';
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
     * stored: parsed and written again, the sender's metadata numbers past double precision would be rounded.
     */
    async list(sourceId: string): Promise<{ event_id: number; text: string }[]> {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await s3.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: `${HANDOFF_PREFIX}${sourceId}/`, ContinuationToken: token }),
        );
        keys.push(...(page.Contents ?? []).map((object) => object.Key!));
        token = page.NextContinuationToken;
      } while (token);
      const stored = await Promise.all(
        keys.map(async (key) => {
          const text = await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();
          // Parsed for its event id (a safe integer) to sort on, and to be sure the text is JSON before anyone splices it.
          return { event_id: (JSON.parse(text) as NormalizedConversation).event_id, text };
        }),
      );
      return stored.sort((a, b) => a.event_id - b.event_id);
    },
  };
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
