import {
  IN_PROGRESS_FIELDS,
  isLive,
  reservationKey,
  startingReservation,
  type IdempotencyRepository,
  type KeyReservation,
  type Lease,
  type NewReservation,
  type ReserveOutcome,
} from '#executions/idempotency-repository.ts';
import { Faults } from './faults.ts';

/**
 * Idempotency-Key reservations in memory, with the repository's conditions: `reserve` wins on a missing key or an
 * expired one, and otherwise answers what holds the key; `find` leaves out expired items (as the store keeps them until
 * TTL deletes them); `takeOver` wins only on the execution and state read, once `starting_until_ms` has passed, and puts
 * its lease in; `markLaunching` (from `starting` only), `markStarted`, `handBack` and `release` apply only to the
 * execution named under the lease named.
 */
export class InMemoryIdempotencyRepository implements IdempotencyRepository {
  readonly items = new Map<string, KeyReservation>();
  readonly faults = new Faults<keyof IdempotencyRepository>();

  async reserve(reservation: NewReservation, nowMs: number): Promise<ReserveOutcome> {
    await this.faults.enter('reserve');
    const id = itemId(reservation.projectId, reservation.key);
    const held = this.items.get(id);
    if (held && isLive(held, nowMs)) return { reserved: false, existing: structuredClone(held) };
    this.items.set(id, startingReservation(reservation));
    return { reserved: true };
  }

  async find(projectId: string, key: string, nowMs: number): Promise<KeyReservation | undefined> {
    await this.faults.enter('find');
    const held = this.items.get(itemId(projectId, key));
    return held && isLive(held, nowMs) ? structuredClone(held) : undefined;
  }

  async markLaunching(projectId: string, key: string, executionId: string, leaseId: string, input: string): Promise<boolean> {
    await this.faults.enter('markLaunching');
    const held = this.heldUnder(projectId, key, executionId, leaseId);
    if (held?.state !== 'starting') return false;
    held.state = 'launching';
    held.start_input = input;
    return true;
  }

  async markStarted(projectId: string, key: string, executionId: string, leaseId: string): Promise<boolean> {
    await this.faults.enter('markStarted');
    const held = this.heldUnder(projectId, key, executionId, leaseId);
    if (!held) return false;
    held.state = 'started';
    for (const field of IN_PROGRESS_FIELDS) delete held[field];
    return true;
  }

  async takeOver(
    projectId: string,
    key: string,
    holder: Pick<KeyReservation, 'execution_id' | 'state'>,
    lease: Lease,
    nowMs: number,
  ): Promise<boolean> {
    await this.faults.enter('takeOver');
    const held = this.items.get(itemId(projectId, key));
    if (!held || held.execution_id !== holder.execution_id || held.state !== holder.state) return false;
    if (held.starting_until_ms === undefined || held.starting_until_ms > nowMs || !isLive(held, nowMs)) return false;
    held.lease_id = lease.id;
    held.starting_until_ms = lease.untilMs;
    return true;
  }

  async handBack(projectId: string, key: string, executionId: string, leaseId: string, nowMs: number): Promise<boolean> {
    await this.faults.enter('handBack');
    const held = this.heldUnder(projectId, key, executionId, leaseId);
    if (!held) return false;
    held.starting_until_ms = nowMs;
    return true;
  }

  async release(projectId: string, key: string, executionId: string, leaseId: string): Promise<boolean> {
    await this.faults.enter('release');
    if (!this.heldUnder(projectId, key, executionId, leaseId)) return false;
    this.items.delete(itemId(projectId, key));
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

  /** The item, when it holds `executionId` under `leaseId` (`started` holds none). */
  private heldUnder(projectId: string, key: string, executionId: string, leaseId: string): KeyReservation | undefined {
    const held = this.items.get(itemId(projectId, key));
    return held?.execution_id === executionId && held.lease_id === leaseId ? held : undefined;
  }
}

const itemId = (projectId: string, key: string) => reservationKey(projectId, key).pk;
