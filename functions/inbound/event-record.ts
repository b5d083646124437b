import {
  MAX_FILTER_VALUE_LENGTH,
  MAX_METADATA_SCHEMA_KEY_LENGTH,
  MAX_METADATA_SCHEMA_KEYS_PER_EVENT,
} from '../shared/limits.ts';
import type { InboundEvent } from './event-schema.ts';
import type { StoredEvent } from './events-repository.ts';

/** Metadata schema rule (webhook spec, section 2): number, boolean, or otherwise string. */
export function metadataFieldTypes(metadata: Record<string, unknown> | undefined): StoredEvent['metadata_fields'] {
  const fields: StoredEvent['metadata_fields'] = {};
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (Object.keys(fields).length >= MAX_METADATA_SCHEMA_KEYS_PER_EVENT) break;
    if (key.length === 0 || key.length > MAX_METADATA_SCHEMA_KEY_LENGTH) continue;
    fields[key] = typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'boolean' : 'string';
  }
  return fields;
}

/** `metadata.direction` feeds the Direction filter of call sources when it is a short string. */
export function directionOf(event: InboundEvent): string | undefined {
  const direction = event.metadata?.direction;
  return event.type === 'call' && typeof direction === 'string' && isFilterValue(direction) ? direction : undefined;
}

export function isFilterValue(value: string): boolean {
  return value.length > 0 && value.length <= MAX_FILTER_VALUE_LENGTH;
}

/** Sortable index key: ISO time first, then the id zero-padded so ties stay ordered. */
export function receivedKey(receivedAt: string, eventId: number): string {
  return `${receivedAt}#${String(eventId).padStart(16, '0')}`;
}
