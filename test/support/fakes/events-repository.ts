import type { EventsRepository } from '#inbound/events-repository.ts';
import { isLive, type StoredEvent } from '#inbound/stored-event.ts';
import { epochSeconds } from '#shared/time.ts';
import { Faults } from './faults.ts';

const keyOf = (sourceId: string, externalId: string) => `${sourceId}\u0000${externalId}`;

/**
 * The inbound events table in memory: one item per (source_id, external_id), and `putIfNew` is the
 * repository's conditional put (stores unless a live item exists: `attribute_not_exists OR expires_at <= now`).
 */
export class InMemoryEventsRepository implements EventsRepository {
  readonly items = new Map<string, StoredEvent>();
  readonly faults = new Faults<keyof EventsRepository>();

  /** A refused write answers the item that is there, as the repository's `ALL_OLD` does. */
  async putIfNew(event: StoredEvent, nowMs: number): Promise<{ stored: true } | { stored: false; existing?: StoredEvent }> {
    await this.faults.enter('putIfNew');
    const existing = this.items.get(keyOf(event.source_id, event.external_id));
    if (existing && !(existing.expires_at <= epochSeconds(nowMs))) return { stored: false, existing: structuredClone(existing) };
    this.items.set(keyOf(event.source_id, event.external_id), structuredClone(event));
    return { stored: true };
  }

  /** Answers the repository's projection only (ids and expiry), as the real GetItem does. */
  async findLive(sourceId: string, externalId: string, nowMs: number): Promise<StoredEvent | undefined> {
    await this.faults.enter('findLive');
    const event = this.items.get(keyOf(sourceId, externalId));
    if (!event || !isLive(event, nowMs)) return undefined;
    const { source_id, external_id, event_id, expires_at } = event;
    return { source_id, external_id, event_id, expires_at } as StoredEvent;
  }

  async recent(sourceId: string, count: number, nowMs: number): Promise<StoredEvent[]> {
    await this.faults.enter('recent');
    return [...this.items.values()]
      .filter((event) => event.source_id === sourceId && isLive(event, nowMs))
      .sort((a, b) => b.received_key.localeCompare(a.received_key))
      .slice(0, count)
      .map((event) => structuredClone(event));
  }

  async remove(sourceId: string, externalId: string): Promise<StoredEvent | undefined> {
    await this.faults.enter('remove');
    const event = this.items.get(keyOf(sourceId, externalId));
    this.items.delete(keyOf(sourceId, externalId));
    return event ? structuredClone(event) : undefined;
  }

  /** Test helper: the whole stored item (the repository itself only reads projections). */
  stored(sourceId: string, externalId: string): StoredEvent | undefined {
    const event = this.items.get(keyOf(sourceId, externalId));
    return event ? structuredClone(event) : undefined;
  }

  /** Test helper: every stored event of a source. */
  ofSource(sourceId: string): StoredEvent[] {
    return [...this.items.values()].filter((event) => event.source_id === sourceId).map((event) => structuredClone(event));
  }
}
