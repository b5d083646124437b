import { constants, gunzipSync, gzipSync } from 'node:zlib';
import {
  INLINE_BODY_MAX_BYTES,
  MAX_FILTER_VALUE_LENGTH,
  MAX_METADATA_SCHEMA_KEY_LENGTH,
  MAX_METADATA_SCHEMA_KEYS_PER_EVENT,
  QUEUE_RETENTION_MS,
} from '#shared/limits.ts';
import type { BodyStore, ObjectEncoding } from '#shared/store/body-store.ts';
import { SECOND_MS, ttlSeconds } from '#shared/time.ts';
import { parseAcceptedBody, type InboundEvent } from './event-schema.ts';

/**
 * An accepted event as the inbound events table keeps it: one item per (source_id, external_id), put by ingest
 * (events-repository.ts) and moved on by the nightly collection (functions/collection/queue-repository.ts). Items
 * live 30 days, so what is written here must stay readable by the next version: attributes keep their names and
 * formats, and a new one is optional.
 */

/**
 * Ingest writes `queued`. A collection sweep claims the event (`handing`), then hands it off (`handed_off`) or gives it
 * back (`queued`, one more failure), or abandons it at the last failure (`abandoned`).
 */
export type EventState = 'queued' | 'handing' | 'handed_off' | 'abandoned';

export type MetadataFieldType = 'number' | 'boolean' | 'string';
/**
 * One first-level metadata key and its type. Stored as a list of pairs, never as a map: caller keys as map
 * keys break the SDK's marshalling (an own `constructor` key fails it, `__proto__` is dropped).
 */
export type MetadataField = [key: string, type: MetadataFieldType];

export interface StoredEvent {
  source_id: string;
  external_id: string;
  event_id: number;
  type: 'call' | 'text';
  state: EventState;
  received_at: string;
  received_key: string;
  occurred_at: string;
  message_count: number;
  source_channel?: string;
  direction?: string;
  metadata_fields: MetadataField[];
  /** The body as received, gzip-compressed, when it fits inside the item (see packBody). */
  body_gzip?: Uint8Array;
  /** Otherwise the key of the object in the bodies bucket holding it. */
  body_s3_key?: string;
  /** Uncompressed. */
  body_bytes: number;
  delivery_failures: number;
  /** TTL, epoch seconds. DynamoDB deletes late, so readers check it too. */
  expires_at: number;
  // Written by the nightly collection as it moves the event on.
  /** The collection sweep (`<task_id>/<sweep_id>`) holding or last holding the claim. */
  handed_run?: string;
  /**
   * The sweeps that gave the event back after trying it (stored names kept for existing tables): each tries an event once, whatever retries
   * its batch has.
   */
  tried_runs?: Set<string>;
  claimed_at_ms?: number;
  last_error?: string;
  handed_at?: string;
}

export function isLive(event: Pick<StoredEvent, 'expires_at'>, nowMs: number): boolean {
  return event.expires_at * SECOND_MS > nowMs;
}

/** The item of an event accepted now: `queued` for the nightly collection, with its body as packed. */
export function newStoredEvent(
  event: InboundEvent,
  ids: { sourceId: string; eventId: number },
  body: PackedBody,
  nowMs: number,
): StoredEvent {
  const receivedAt = new Date(nowMs).toISOString();
  return {
    source_id: ids.sourceId,
    external_id: event.external_id,
    event_id: ids.eventId,
    type: event.type,
    state: 'queued',
    received_at: receivedAt,
    received_key: receivedKey(receivedAt, ids.eventId),
    occurred_at: event.occurred_at,
    message_count: event.type === 'text' ? event.messages.length : 0,
    source_channel: event.source_channel,
    direction: directionOf(event),
    metadata_fields: metadataFieldTypes(event.metadata),
    ...body.attributes,
    delivery_failures: 0,
    expires_at: ttlSeconds(nowMs + QUEUE_RETENTION_MS),
  };
}

/** Sortable index key: ISO time first, then the id zero-padded so ties stay ordered. */
export function receivedKey(receivedAt: string, eventId: number): string {
  return `${receivedAt}#${String(eventId).padStart(16, '0')}`;
}

/** A metadata field's type in its source's schema (`links schema`, lib/admin/README.md): number, boolean, or otherwise string. */
export function metadataFieldTypes(metadata: Record<string, unknown> | undefined): MetadataField[] {
  const fields: MetadataField[] = [];
  // Object.entries reads own keys only, so `constructor` or `__proto__` are the sender's, never the prototype's.
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (fields.length >= MAX_METADATA_SCHEMA_KEYS_PER_EVENT) break;
    if (key.length === 0 || key.length > MAX_METADATA_SCHEMA_KEY_LENGTH) continue;
    fields.push([key, fieldType(value)]);
  }
  return fields;
}

function fieldType(value: unknown): MetadataFieldType {
  return typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'boolean' : 'string';
}

/**
 * A stored event's fields as pairs. Events stored before the pair format hold a map; they are read too until
 * they expire (30 days).
 */
export function storedMetadataFields(stored: MetadataField[] | Record<string, MetadataFieldType> | undefined): MetadataField[] {
  if (stored === undefined) return [];
  return Array.isArray(stored) ? stored : Object.entries(stored);
}

/** `metadata.direction` feeds the Direction filter of call sources when it is a short string. */
function directionOf(event: InboundEvent): string | undefined {
  const direction = event.metadata?.direction;
  return event.type === 'call' && typeof direction === 'string' && isFilterValue(direction) ? direction : undefined;
}

/**
 * A value the Channel and Direction filter lists take: 1 to 64 characters, counted as the event schema counts
 * `source_channel` (code points), so every channel an event may carry is listed, emoji included.
 */
export function isFilterValue(value: string): boolean {
  if (value.length === 0) return false;
  if (value.length <= MAX_FILTER_VALUE_LENGTH) return true;
  let characters = 0;
  for (const _character of value) {
    characters += 1;
    if (characters > MAX_FILTER_VALUE_LENGTH) return false;
  }
  return true;
}

/*
 * The body: the bytes received, exactly (the sender's metadata numbers are kept as written), gzip-compressed. Inside
 * the item up to INLINE_BODY_MAX_BYTES of gzip; past it, an object in the bodies bucket under `inbound/` (the prefix
 * the functions' grants and the bucket's lifecycle rule name), written before the item that points at it.
 */

/** A body ready to store: what its item holds of it, and the object to write first when it does not fit there. */
export interface PackedBody {
  attributes: Pick<StoredEvent, 'body_gzip' | 'body_s3_key' | 'body_bytes'>;
  object?: { key: string; gzip: Buffer };
}

/** So that a body downloaded from the bucket opens as the sender's JSON. */
const BODY_OBJECT_ENCODING: ObjectEncoding = { contentType: 'application/json', contentEncoding: 'gzip' };

export function packBody(raw: Buffer, sourceId: string, eventId: number): PackedBody {
  const gzip = compressBody(raw);
  if (gzip.byteLength <= INLINE_BODY_MAX_BYTES)
    return { attributes: { body_gzip: gzip, body_s3_key: undefined, body_bytes: raw.byteLength } };
  const key = `inbound/${sourceId}/${eventId}.json.gz`;
  return { attributes: { body_gzip: undefined, body_s3_key: key, body_bytes: raw.byteLength }, object: { key, gzip } };
}

/** Writes the body's object, when it has one: before the item is put. */
export async function writeBody(bodies: Pick<BodyStore, 'put'>, body: PackedBody): Promise<void> {
  if (body.object) await bodies.put(body.object.key, body.object.gzip, BODY_OBJECT_ENCODING);
}

/** A stored body read back: the sender's JSON text and the event it holds, or what is wrong with the stored bytes. */
export type BodyReading = { ok: true; text: string; event: InboundEvent } | { ok: false; problem: string };

/**
 * Reads an event's body back, from the item or the bucket. A failing bucket read throws (the platform's problem); bytes
 * that are not an accepted body are answered as a problem of the event's own. The event is the one accepted: unknown
 * fields dropped as at acceptance, and `occurred_at` as sent, however long ago it was inside the acceptance window.
 */
export async function readBody(
  bodies: Pick<BodyStore, 'get'>,
  stored: Pick<StoredEvent, 'body_gzip' | 'body_s3_key'>,
): Promise<BodyReading> {
  const gzip = stored.body_s3_key ? await bodies.get(stored.body_s3_key) : stored.body_gzip!;
  let text: string;
  let body: unknown;
  try {
    text = gunzipSync(gzip).toString('utf8');
    body = JSON.parse(text);
  } catch (error) {
    return { ok: false, problem: `stored body unreadable: ${(error as Error).message}` };
  }
  const parsed = parseAcceptedBody(body);
  if (!parsed.ok) return { ok: false, problem: `stored event no longer parses: ${parsed.issues.map((issue) => issue.field).join(', ')}` };
  return { ok: true, text, event: parsed.event };
}

/**
 * How much larger the fastest level's output may be than the default level's on chat text: up to 1.32 on Russian
 * dialogs, 1.10 on English (measured on dialogs whose default-level body is 8-16 KB).
 */
const FAST_LEVEL_GROWTH = 1.5;

/**
 * The fastest level costs a 2000-message dialog 2-3 ms where the default level cost 5-16 ms, for an output 5-35 %
 * larger; a larger body only matters where it would no longer fit inside the item, which would cost the request a
 * second write. So a body the fast level leaves just above that limit is compressed again at the default level, as it
 * always was, and every body that was stored inline still is.
 */
function compressBody(raw: Buffer): Buffer {
  const fast = gzipSync(raw, { level: constants.Z_BEST_SPEED });
  if (fast.byteLength <= INLINE_BODY_MAX_BYTES || fast.byteLength > INLINE_BODY_MAX_BYTES * FAST_LEVEL_GROWTH) return fast;
  const tight = gzipSync(raw);
  return tight.byteLength < fast.byteLength ? tight : fast;
}
