import { usageSortKey } from '#shared/metering/usage-meter.ts';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from '#shared/store/conditional-write.ts';
import { COST_UNIT_NAMES, type CarriedUsage } from '#shared/metering/cost-meter.ts';
import { RATE_LIMITS, rateWindow, type RateWindow } from '#shared/rate-limits.ts';
import { DAY_MS, epochSeconds, MINUTE_MS } from '#shared/time.ts';
import { USAGE_RETENTION_MS, usageAttribute } from '#shared/metering/usage-meter.ts';

/**
 * A link's two limits, requests per minute and accepted events per UTC day (as the webhook API's OpenAPI document
 * states them), kept in the link's item of the day in the usage table (`link#<id>` / `<day>#limits`) next to what the
 * link's requests cost, so one conditional UpdateItem counts the request, the event and their units. The item holds
 * `day_count` and one `m<minute of the day>` count per minute; each update removes the minute before, and minutes
 * left behind by a quiet spell (seen in the returned item) are removed by the next update this process makes for the
 * link. A link takes at most 600 requests a minute, so its one item never gets near a partition's 1,000 writes a
 * second.
 */
export type Admission = 'admitted' | 'rateLimited' | 'overQuota';

export interface LinkLimitTicket {
  readonly admission: Admission;
  /** The 429 of the limit that refused, with Retry-After until its window ends. */
  readonly minute: RateWindow;
  readonly day: RateWindow;
  /** Gives back the day's unit of an event that was not accepted after all (a duplicate, a failed write). */
  giveBack(usage?: CarriedUsage): Promise<void>;
}

const DAY_COUNT = 'day_count';
const MINUTE_ATTRIBUTE = /^m\d+$/;
/** Leftover minute attributes seen per link, removed by the next update; bounded so a process never grows it. */
const MAX_LINKS_WITH_LEFTOVERS = 1000;

export function createLinkLimits(client: DynamoDBDocumentClient, usageTable: string) {
  const leftovers = new Map<string, string[]>();

  /** One conditional update of the day's item: the minute, the day (for an event) and the usage it carries. */
  async function update(
    linkId: string,
    withEvent: boolean,
    nowMs: number,
    usage?: CarriedUsage,
  ): Promise<{ taken: boolean; old?: Record<string, number> }> {
    const day = dayWindow(linkId, nowMs);
    const minuteOfDay = minuteOf(day, nowMs);
    const minute = `m${minuteOfDay}`;
    const stale = [...new Set([...(minuteOfDay > 0 ? [`m${minuteOfDay - 1}`] : []), ...(leftovers.get(linkId) ?? [])])].filter(
      (name) => name !== minute,
    );
    const names: Record<string, string> = { '#minute': minute, ...Object.fromEntries(stale.map((name, i) => [`#stale${i}`, name])) };
    const values: Record<string, unknown> = {
      ':one': 1,
      ':rate': RATE_LIMITS.requestsPerLinkPerMinute.limit,
      ':expires': epochSeconds(nowMs + USAGE_RETENTION_MS),
    };
    const adds = ['#minute :one'];
    // A comparison with a missing attribute is false, so `NOT (count >= limit)` also holds for a new minute or day:
    // the test of `attribute_not_exists(count) OR count < limit`, in one comparison per limit.
    const reached = ['#minute >= :rate'];
    if (withEvent) {
      names['#day'] = DAY_COUNT;
      values[':quota'] = RATE_LIMITS.acceptedEventsPerLinkPerDay.limit;
      reached.push('#day >= :quota');
      adds.push('#day :one');
    }
    const condition = `NOT (${reached.join(' OR ')})`;
    adds.push(...usageAdds(usage, names, values));
    const remove = stale.length > 0 ? ` REMOVE ${stale.map((_, i) => `#stale${i}`).join(', ')}` : '';
    try {
      const result = await client.send(
        new UpdateCommand({
          TableName: usageTable,
          Key: dayKey(linkId, nowMs),
          UpdateExpression: `ADD ${adds.join(', ')} SET expires_at = :expires${remove}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      usage?.carried();
      remember(
        linkId,
        Object.keys(result.Attributes ?? {}).filter((name) => MINUTE_ATTRIBUTE.test(name) && Number(name.slice(1)) < minuteOfDay),
      );
      return { taken: true };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const old = (error as { Item?: Record<string, AttributeValue> }).Item ?? {};
      return { taken: false, old: Object.fromEntries(Object.entries(old).map(([name, value]) => [name, Number(value.N ?? 0)])) };
    }
  }

  function remember(linkId: string, names: string[]): void {
    if (names.length === 0) return void leftovers.delete(linkId);
    if (leftovers.size >= MAX_LINKS_WITH_LEFTOVERS) leftovers.delete(leftovers.keys().next().value!);
    leftovers.set(linkId, names);
  }

  async function giveBack(linkId: string, nowMs: number, usage?: CarriedUsage): Promise<void> {
    const names: Record<string, string> = { '#day': DAY_COUNT };
    const values: Record<string, unknown> = { ':minusOne': -1 };
    const adds = ['#day :minusOne', ...usageAdds(usage, names, values)];
    await client.send(
      new UpdateCommand({
        TableName: usageTable,
        Key: dayKey(linkId, nowMs),
        UpdateExpression: `ADD ${adds.join(', ')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    usage?.carried();
  }

  return {
    /**
     * Counts one request against the link's minute, and for an event one unit of its day, in one UpdateItem that
     * also carries `usage`. A request refused by the day still counts against the minute (every request counts:
     * functions/inbound/README.md#webhook-behaviour-beyond-the-brief): that takes a second update, on the refused path
     * only. A refused update stores nothing.
     */
    async take(linkId: string, kind: 'request' | 'event', nowMs: number, usage?: CarriedUsage): Promise<LinkLimitTicket> {
      const minute = rateWindow(RATE_LIMITS.requestsPerLinkPerMinute, linkId, nowMs);
      const day = dayWindow(linkId, nowMs);
      const ticket = (admission: Admission, dayTaken: boolean): LinkLimitTicket => ({
        admission,
        minute,
        day,
        giveBack: (carried) => (dayTaken ? giveBack(linkId, nowMs, carried) : Promise.resolve()),
      });
      const first = await update(linkId, kind === 'event', nowMs, usage);
      if (first.taken) return ticket('admitted', kind === 'event');
      const minuteCount = first.old?.[`m${minuteOf(day, nowMs)}`] ?? 0;
      if (kind === 'request' || minuteCount >= RATE_LIMITS.requestsPerLinkPerMinute.limit) return ticket('rateLimited', false);
      const second = await update(linkId, false, nowMs, usage);
      return ticket(second.taken ? 'overQuota' : 'rateLimited', false);
    },
  };
}

/** The ADD clauses of the units `usage` carries (none when there is nothing to carry). */
function usageAdds(usage: CarriedUsage | undefined, names: Record<string, string>, values: Record<string, unknown>): string[] {
  if (!usage) return [];
  return COST_UNIT_NAMES.filter((name) => usage.units[name] !== 0).map((name, i) => {
    names[`#u${i}`] = usageAttribute(name);
    values[`:u${i}`] = usage.units[name];
    return `#u${i} :u${i}`;
  });
}

const dayWindow = (linkId: string, nowMs: number) => rateWindow(RATE_LIMITS.acceptedEventsPerLinkPerDay, linkId, nowMs);

/** Minutes are counted from the start of the UTC day: both windows are aligned on the epoch, so a day holds 1440. */
function minuteOf(day: RateWindow, nowMs: number): number {
  return Math.floor((nowMs - (day.endMs - DAY_MS)) / MINUTE_MS);
}

/** The link's item of the UTC day in the usage table, beside its usage items (`<day>#<shard>`), which the report adds up with it. */
function dayKey(linkId: string, nowMs: number) {
  return { pk: `link#${linkId}`, sk: usageSortKey(new Date(nowMs).toISOString().slice(0, 10), 'limits') };
}

export type LinkLimits = ReturnType<typeof createLinkLimits>;
