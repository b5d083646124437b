import {
  MAX_FILTER_VALUE_LENGTH,
  MAX_METADATA_SCHEMA_KEY_LENGTH,
  MAX_METADATA_SCHEMA_KEYS_PER_EVENT,
} from '#shared/limits.ts';
import type { InboundEvent } from './event-schema.ts';
import type { MetadataField, MetadataFieldType } from './events-repository.ts';

/** Metadata schema rule (webhook spec, section 2): number, boolean, or otherwise string. */
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
export function directionOf(event: InboundEvent): string | undefined {
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

/** Sortable index key: ISO time first, then the id zero-padded so ties stay ordered. */
export function receivedKey(receivedAt: string, eventId: number): string {
  return `${receivedAt}#${String(eventId).padStart(16, '0')}`;
}
