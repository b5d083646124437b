import type { IdempotencyRepository, KeyReservation, NewReservation, ReserveOutcome } from '#executions/idempotency-repository.ts';
import { epochSeconds, ttlSeconds } from '#shared/time.ts';
import { Faults } from './faults.ts';

/**
 * Idempotency-Key reservations in memory, with the repository's conditions: `reserve` wins on a missing key, an expired
 * one or one abandoned while starting, and otherwise answers what holds the key; `find` leaves out expired items (as
 * the store keeps them until TTL deletes them); `markStarted` and `release` apply only to the execution named.
 */
export class InMemoryIdempotencyRepository implements IdempotencyRepository {
  readonly items = new Map<string, KeyReservation>();
  readonly faults = new Faults<keyof IdempotencyRepository>();

  async reserve(reservation: NewReservation, nowMs: number): Promise<ReserveOutcome> {
    await this.faults.enter('reserve');
    const id = itemId(reservation.projectId, reservation.key);
    const held = this.items.get(id);
    const free = !held || held.expires_at <= epochSeconds(nowMs) || (held.state === 'starting' && (held.starting_until_ms ?? 0) <= nowMs);
    if (!free) return { reserved: false, existing: structuredClone(held) };
    this.items.set(id, {
      execution_id: reservation.executionId,
      request_sha256: reservation.requestSha256,
      state: 'starting',
      starting_until_ms: reservation.startingUntilMs,
      expires_at: ttlSeconds(reservation.expiresAtMs),
    });
    return { reserved: true };
  }

  async find(projectId: string, key: string, nowMs: number): Promise<KeyReservation | undefined> {
    await this.faults.enter('find');
    const held = this.items.get(itemId(projectId, key));
    return held && held.expires_at > epochSeconds(nowMs) ? structuredClone(held) : undefined;
  }

  async markStarted(projectId: string, key: string, executionId: string): Promise<boolean> {
    await this.faults.enter('markStarted');
    const held = this.items.get(itemId(projectId, key));
    if (held?.execution_id !== executionId) return false;
    held.state = 'started';
    delete held.starting_until_ms;
    return true;
  }

  async release(projectId: string, key: string, executionId: string): Promise<boolean> {
    await this.faults.enter('release');
    const id = itemId(projectId, key);
    const held = this.items.get(id);
    if (held?.execution_id !== executionId || held.state !== 'starting') return false;
    this.items.delete(id);
    return true;
  }

  /** Test helper: what holds a key, as stored (expired or not). */
  held(projectId: string, key: string): KeyReservation | undefined {
    return this.items.get(itemId(projectId, key));
  }

  /** Test helper: puts a reservation as a request would have left it (no checks). */
  seed(projectId: string, key: string, reservation: KeyReservation): void {
    this.items.set(itemId(projectId, key), structuredClone(reservation));
  }
}

const itemId = (projectId: string, key: string) => JSON.stringify([projectId, key]);
