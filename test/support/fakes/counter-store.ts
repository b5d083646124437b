import type { CounterStore } from '#shared/store/counter-store.ts';
import { Faults } from './faults.ts';

/**
 * The counters table in memory, with the store's atomic semantics: `incrementBelow` adds one only below its
 * limit, `decrement` is an unconditional ADD -1 (on a missing counter it creates -1, as DynamoDB's ADD does),
 * and the first write of a counter sets its expiry (`if_not_exists`). Expiry is kept, not enforced: DynamoDB's
 * TTL deletes late, and the windows' keys already change when a window ends.
 */
export class InMemoryCounterStore implements CounterStore {
  readonly counters = new Map<string, { count: number; expiresAtMs?: number }>();
  /** `decrement` is the link limits fake's give-back (test/support/fakes/link-limits.ts), an ADD -1 like the real one. */
  readonly faults = new Faults<keyof CounterStore | 'decrement'>();

  async incrementBelow(key: string, limit: number, expiresAtMs: number): Promise<boolean> {
    await this.faults.enter('incrementBelow');
    const counter = this.counters.get(key);
    if (counter && counter.count >= limit) return false;
    this.add(key, 1, expiresAtMs);
    return true;
  }

  async increment(key: string, expiresAtMs: number): Promise<number> {
    await this.faults.enter('increment');
    return this.add(key, 1, expiresAtMs);
  }

  async decrement(key: string): Promise<void> {
    await this.faults.enter('decrement');
    this.add(key, -1);
  }

  async read(key: string): Promise<number> {
    await this.faults.enter('read');
    return this.counters.get(key)?.count ?? 0;
  }

  /** Test helper: a counter's value without counting a call (0 when absent). */
  value(key: string): number {
    return this.counters.get(key)?.count ?? 0;
  }

  /** Test helper: sets a counter, as a test writing the table directly would. */
  set(key: string, count: number, expiresAtMs?: number): void {
    this.counters.set(key, { count, expiresAtMs });
  }

  /** Test helper: the keys that contain `part` (a link id, an IP address), so tests need not spell out key formats. */
  keysContaining(part: string): string[] {
    return [...this.counters.keys()].filter((key) => key.includes(part));
  }

  private add(key: string, delta: number, expiresAtMs?: number): number {
    const counter = this.counters.get(key) ?? { count: 0 };
    counter.count += delta;
    counter.expiresAtMs ??= expiresAtMs;
    this.counters.set(key, counter);
    return counter.count;
  }
}
