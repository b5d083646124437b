import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from '#shared/conditional-write.ts';
import { RATE_LIMITS, rateWindow, type RateWindow } from '#shared/rate-limits.ts';
import { DAY_MS, MINUTE_MS, ttlSeconds } from '#shared/time.ts';

/**
 * A link's two limits, requests per minute and accepted events per UTC day (webhook spec section 8), in one
 * counter item per link and day, so one conditional UpdateItem counts both. The item holds `day_count` and one
 * `m<minute of the day>` count per minute; each update removes the minute before, and minutes left behind by a
 * quiet spell (seen in the returned item) are removed by the next update this process makes for the link.
 */
export type Admission = 'admitted' | 'rateLimited' | 'overQuota';

export interface LinkLimitTicket {
  readonly admission: Admission;
  /** The 429 of the limit that refused, with Retry-After until its window ends. */
  readonly minute: RateWindow;
  readonly day: RateWindow;
  /** Gives back the day's unit of an event that was not accepted after all (a duplicate, a failed write). */
  giveBack(): Promise<void>;
}

const DAY_COUNT = 'day_count';
const MINUTE_ATTRIBUTE = /^m\d+$/;
/** Leftover minute attributes seen per link, removed by the next update; bounded so a process never grows it. */
const MAX_LINKS_WITH_LEFTOVERS = 1000;

export function createLinkLimits(client: DynamoDBDocumentClient, countersTable: string) {
  const leftovers = new Map<string, string[]>();

  async function update(linkId: string, withEvent: boolean, nowMs: number): Promise<{ taken: true } | { taken: false; old?: Record<string, unknown> }> {
    const day = rateWindow(RATE_LIMITS.acceptedEventsPerLinkPerDay, linkId, nowMs);
    const minuteOfDay = minuteOf(day, nowMs);
    const minute = minuteAttribute(day, nowMs);
    const stale = [...new Set([...(minuteOfDay > 0 ? [`m${minuteOfDay - 1}`] : []), ...(leftovers.get(linkId) ?? [])])].filter((name) => name !== minute);
    const names: Record<string, string> = { '#minute': minute, ...Object.fromEntries(stale.map((name, i) => [`#stale${i}`, name])) };
    const values: Record<string, unknown> = { ':one': 1, ':rate': RATE_LIMITS.requestsPerLinkPerMinute.limit, ':expires': ttlSeconds(day.expiresAtMs) };
    let condition = '(attribute_not_exists(#minute) OR #minute < :rate)';
    let add = 'ADD #minute :one';
    if (withEvent) {
      names['#day'] = DAY_COUNT;
      values[':quota'] = RATE_LIMITS.acceptedEventsPerLinkPerDay.limit;
      condition += ' AND (attribute_not_exists(#day) OR #day < :quota)';
      add += ', #day :one';
    }
    const remove = stale.length > 0 ? ` REMOVE ${stale.map((_, i) => `#stale${i}`).join(', ')}` : '';
    try {
      const result = await client.send(
        new UpdateCommand({
          TableName: countersTable,
          Key: { pk: dayKey(linkId, day) },
          UpdateExpression: `${add} SET expires_at = if_not_exists(expires_at, :expires)${remove}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      remember(linkId, Object.keys(result.Attributes ?? {}).filter((name) => MINUTE_ATTRIBUTE.test(name) && name !== minute && Number(name.slice(1)) < minuteOfDay));
      return { taken: true };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const old = (error as { Item?: Record<string, AttributeValue> }).Item;
      return { taken: false, old: old ? Object.fromEntries(Object.entries(old).map(([name, value]) => [name, Number(value.N ?? 0)])) : undefined };
    }
  }

  function remember(linkId: string, names: string[]): void {
    if (names.length === 0) return void leftovers.delete(linkId);
    if (leftovers.size >= MAX_LINKS_WITH_LEFTOVERS) leftovers.delete(leftovers.keys().next().value!);
    leftovers.set(linkId, names);
  }

  return {
    /**
     * Counts one request against the link's minute, and for an event one unit of its day, in one UpdateItem. A
     * request refused by the day still counts against the minute (every request counts, section 8): that takes a
     * second update, on the refused path only.
     */
    async take(linkId: string, kind: 'request' | 'event', nowMs: number): Promise<LinkLimitTicket> {
      const minute = rateWindow(RATE_LIMITS.requestsPerLinkPerMinute, linkId, nowMs);
      const day = rateWindow(RATE_LIMITS.acceptedEventsPerLinkPerDay, linkId, nowMs);
      const ticket = (admission: Admission, dayTaken: boolean): LinkLimitTicket => ({
        admission,
        minute,
        day,
        giveBack: () => (dayTaken ? giveBack(linkId, day) : Promise.resolve()),
      });
      const first = await update(linkId, kind === 'event', nowMs);
      if (first.taken) return ticket('admitted', kind === 'event');
      const minuteCount = Number(first.old?.[minuteAttribute(day, nowMs)] ?? 0);
      if (kind === 'request' || minuteCount >= RATE_LIMITS.requestsPerLinkPerMinute.limit) return ticket('rateLimited', false);
      const second = await update(linkId, false, nowMs);
      return ticket(second.taken ? 'overQuota' : 'rateLimited', false);
    },
  };

  async function giveBack(linkId: string, day: RateWindow): Promise<void> {
    await client.send(
      new UpdateCommand({
        TableName: countersTable,
        Key: { pk: dayKey(linkId, day) },
        UpdateExpression: 'ADD #day :minusOne',
        ExpressionAttributeNames: { '#day': DAY_COUNT },
        ExpressionAttributeValues: { ':minusOne': -1 },
      }),
    );
  }
}

/** Minutes are counted from the start of the UTC day: both windows are aligned on the epoch, so a day holds 1440. */
function minuteOf(day: RateWindow, nowMs: number): number {
  return Math.floor((nowMs - (day.endMs - DAY_MS)) / MINUTE_MS);
}

function minuteAttribute(day: RateWindow, nowMs: number): string {
  return `m${minuteOf(day, nowMs)}`;
}

/** `limits#<link>#<UTC day>`: the day window's key with the prefix of the merged counter. */
function dayKey(linkId: string, day: RateWindow): string {
  return `limits#${linkId}#${day.key.slice(day.key.lastIndexOf('#') + 1)}`;
}

export type LinkLimits = ReturnType<typeof createLinkLimits>;
