import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createLinkLimits } from '#inbound/link-limits.ts';
import { emptyCostUnits, type CarriedUsage } from '#shared/metering/cost-meter.ts';
import { MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK, MAX_REQUESTS_PER_MINUTE_PER_LINK } from '#shared/limits.ts';
import { localTableName } from '#lib/twin/stores.ts';
import { useEmbeddedDynamo } from '../support/embedded-dynamo.ts';

/** A link's limits and usage in its day item, against the embedded DynamoDB (the conditions and ALL_OLD answers are the store's). */
describe('link limits (embedded DynamoDB)', () => {
  const store = useEmbeddedDynamo('link-limits');
  const table = localTableName('usage');
  // 12:00:30 UTC: the 720th minute of the day.
  const noon = Date.parse('2026-11-24T12:00:30.000Z');

  const dayItem = async (linkId: string) =>
    (await store().send(new GetCommand({ TableName: table, Key: { pk: `link#${linkId}`, sk: '2026-11-24#limits' }, ConsistentRead: true })))
      .Item;
  const carried = (units: Partial<ReturnType<typeof emptyCostUnits>>) => {
    const usage = { units: { ...emptyCostUnits(), ...units }, carriedTimes: 0, carried: () => void (usage.carriedTimes += 1) };
    return usage satisfies CarriedUsage;
  };

  it('counts a request in its minute, an event in its minute and its day, and adds the usage carried, in one item', async () => {
    const limits = createLinkLimits(store(), table);
    const link = randomUUID();
    const usage = carried({ apiRequests: 1, dynamoWriteUnits: 2 });
    expect((await limits.take(link, 'request', noon)).admission).toBe('admitted');
    expect((await limits.take(link, 'event', noon, usage)).admission).toBe('admitted');
    expect(usage.carriedTimes).toBe(1);
    expect(await dayItem(link)).toMatchObject({ m720: 2, day_count: 1, api_requests: 1, dynamo_write_units: 2 });
  });

  it('refuses the minute past its limit and counts nothing, carries no usage', async () => {
    const limits = createLinkLimits(store(), table);
    const link = randomUUID();
    await store().send(
      new PutCommand({
        TableName: table,
        Item: { pk: `link#${link}`, sk: '2026-11-24#limits', m720: MAX_REQUESTS_PER_MINUTE_PER_LINK, day_count: 5 },
      }),
    );
    const usage = carried({ apiRequests: 1 });
    const ticket = await limits.take(link, 'event', noon, usage);
    expect(ticket.admission).toBe('rateLimited');
    expect(ticket.minute.refuse().retryAfterSeconds).toBe(30);
    expect(usage.carriedTimes).toBe(0);
    expect(await dayItem(link)).toEqual({
      pk: `link#${link}`,
      sk: '2026-11-24#limits',
      m720: MAX_REQUESTS_PER_MINUTE_PER_LINK,
      day_count: 5,
    });
  });

  it('answers over quota with the request still counted in its minute, and the day untouched', async () => {
    const limits = createLinkLimits(store(), table);
    const link = randomUUID();
    await store().send(
      new PutCommand({
        TableName: table,
        Item: { pk: `link#${link}`, sk: '2026-11-24#limits', day_count: MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK },
      }),
    );
    const ticket = await limits.take(link, 'event', noon, carried({ apiRequests: 1 }));
    expect(ticket.admission).toBe('overQuota');
    expect(ticket.day.refuse().retryAfterSeconds).toBe(12 * 3600 - 30);
    expect(await dayItem(link)).toMatchObject({ m720: 1, day_count: MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK, api_requests: 1 });
  });

  it('gives the day unit back with the usage correction, only for a ticket that took one', async () => {
    const limits = createLinkLimits(store(), table);
    const link = randomUUID();
    const event = await limits.take(link, 'event', noon, carried({ webhookEvents: 1 }));
    const request = await limits.take(link, 'request', noon);
    await request.giveBack();
    await event.giveBack(carried({ webhookEvents: -1, dynamoWriteUnits: 1 }));
    expect(await dayItem(link)).toMatchObject({ m720: 2, day_count: 0, webhook_events: 0, dynamo_write_units: 1 });
  });

  it('removes the minute before with each update, and minutes a quiet spell left behind with the next one', async () => {
    const limits = createLinkLimits(store(), table);
    const link = randomUUID();
    await limits.take(link, 'request', noon);
    await limits.take(link, 'request', noon + 60_000);
    expect(await dayItem(link)).toMatchObject({ m721: 1 });
    expect(await dayItem(link)).not.toHaveProperty('m720');
    // Five quiet minutes: m721 is no longer the minute before, but the update shows it, and the next one removes it.
    await limits.take(link, 'request', noon + 6 * 60_000);
    expect(await dayItem(link)).toMatchObject({ m721: 1, m726: 1 });
    await limits.take(link, 'request', noon + 6 * 60_000);
    const item = await dayItem(link);
    expect(Object.keys(item!).filter((name) => /^m\d+$/.test(name))).toEqual(['m726']);
    expect(item).toMatchObject({ m726: 2 });
  });
});
