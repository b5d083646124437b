import type { Admission, LinkLimits, LinkLimitTicket } from '#inbound/link-limits.ts';
import type { CarriedUsage } from '#shared/metering/cost-meter.ts';
import { RATE_LIMITS, rateWindow } from '#shared/rate-limits.ts';
import type { InMemoryCounterStore } from './counter-store.ts';

/**
 * A link's minute and day limits in memory, with the merged counter's semantics: one take counts the minute and,
 * for an event, the day, or neither; a request the day refuses still counts against the minute. The day's units
 * live in the counters fake (`quota#<link>#<day>`, given back with its `decrement`), the minutes apart.
 */
export class InMemoryLinkLimits implements LinkLimits {
  readonly minutes = new Map<string, number>();
  /** The usage each give-back carried, in order (undefined: it carried none). */
  readonly givenBack: (CarriedUsage | undefined)[] = [];

  constructor(private readonly counters: InMemoryCounterStore) {}

  async take(linkId: string, kind: 'request' | 'event', nowMs: number, usage?: CarriedUsage): Promise<LinkLimitTicket> {
    const minute = rateWindow(RATE_LIMITS.requestsPerLinkPerMinute, linkId, nowMs);
    const day = rateWindow(RATE_LIMITS.acceptedEventsPerLinkPerDay, linkId, nowMs);
    const ticket = (admission: Admission, dayTaken: boolean): LinkLimitTicket => ({
      admission,
      minute,
      day,
      giveBack: async (carried) => {
        if (!dayTaken) return;
        await this.counters.decrement(day.key);
        this.givenBack.push(carried);
        carried?.carried();
      },
    });
    const minuteCount = this.minutes.get(minute.key) ?? 0;
    if (minuteCount >= RATE_LIMITS.requestsPerLinkPerMinute.limit) return ticket('rateLimited', false);
    this.minutes.set(minute.key, minuteCount + 1);
    usage?.carried();
    if (kind === 'request') return ticket('admitted', false);
    const taken = await this.counters.incrementBelow(day.key, RATE_LIMITS.acceptedEventsPerLinkPerDay.limit, day.expiresAtMs);
    return ticket(taken ? 'admitted' : 'overQuota', taken);
  }

  /** Test helper: the requests counted against a link in all minutes. */
  requestsOf(linkId: string): number {
    return [...this.minutes].filter(([key]) => key.includes(linkId)).reduce((sum, [, count]) => sum + count, 0);
  }

  /** Test helper: fills the link's current minute. */
  fillMinute(linkId: string, nowMs: number): void {
    this.minutes.set(rateWindow(RATE_LIMITS.requestsPerLinkPerMinute, linkId, nowMs).key, RATE_LIMITS.requestsPerLinkPerMinute.limit);
  }
}
