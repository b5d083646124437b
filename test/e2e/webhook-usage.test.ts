import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COST_UNIT_NAMES, type CostUnits } from '#shared/metering/cost-meter.ts';
import { usageAttribute } from '#shared/metering/usage-meter.ts';
import { callEvent } from '../support/events.ts';
import { http, postJson } from '../support/http.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import type { ServedRequest } from '#lib/twin/iam/front-door.ts';

/**
 * A webhook request's usage rides in the update of its link's day item (no usage write of its own); what the
 * admission could not know in advance is written as a correction at the end. Either way the link's usage items must
 * add up to what the stores were actually asked, request for request.
 */
const served: ServedRequest[] = [];
let twin: TestTwin;

beforeAll(async () => {
  twin = await startTestTwin({ onStoreRequest: (request) => void served.push(request) });
});
afterAll(() => twin?.close());

async function usageOf(linkId: string): Promise<{ items: Record<string, unknown>[]; units: Partial<CostUnits> }> {
  const { Items = [] } = await twin.dynamo.send(
    new QueryCommand({
      TableName: twin.twin.tables.usage,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `link#${linkId}` },
    }),
  );
  const units = Object.fromEntries(
    COST_UNIT_NAMES.map((name) => [name, Items.reduce((sum, item) => sum + Number(item[usageAttribute(name)] ?? 0), 0)]),
  );
  return { items: Items, units };
}

describe("a link's usage, carried by its limits update", () => {
  it('adds up to the requests made: new events, a duplicate, a ping and a refused body', async () => {
    const link = await boundLink(twin, 'calls');
    const eventsUrl = `${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`;
    const first = served.length;
    const repeated = callEvent();
    const events = [repeated, callEvent(), callEvent(), callEvent()];
    for (const event of events) expect((await postJson(eventsUrl, event)).status).toBe(201);
    expect((await postJson(eventsUrl, repeated)).status).toBe(200);
    expect((await http(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/ping`)).status).toBe(200);
    expect((await postJson(eventsUrl, { type: 'call' })).status).toBe(400);
    // The last answer's bookkeeping lands after the client has it, as its invocation ends.
    await twin.settled(['WebhookPostEvent', 'WebhookPing']);

    const { items, units } = await usageOf(link.linkId);
    // Requests to the webhook API's HTTP API, none to the Published API's REST API.
    expect(units.httpApiRequests).toBe(7);
    expect(units.apiRequests).toBe(0);
    expect(units.lambdaInvocations).toBe(7);
    expect(units.webhookEvents).toBe(events.length);
    expect(units.lambdaGbMs).toBeGreaterThan(0);
    // The day item holds the limits and most of the usage; corrections (the first event's id block and filter
    // values, which no admission can foresee) are the only other usage items.
    const dayItem = items.find((item) => String(item.sk).endsWith('#limits'))!;
    expect(dayItem).toMatchObject({ day_count: events.length });
    expect(items.length).toBeLessThanOrEqual(3);

    // Every store request a webhook function made for this link, as the front door saw it, is in the usage: the
    // write units of the writes (a refused put is billed one) and the read units of the reads.
    const ours = served.slice(first).filter((request) => request.principal === 'WebhookPostEvent' || request.principal === 'WebhookPing');
    const writes = ours.filter((request) => ['PutItem', 'UpdateItem'].includes(request.operation)).length;
    const reads = ours.filter((request) => ['GetItem', 'BatchGetItem'].includes(request.operation)).length;
    // Small items: one write unit each, half a read unit per item read (a batch of two reads two); an accepted event's
    // put also writes its entry in the events' index by receipt, one unit more (a refused put writes none):
    // docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.
    expect(units.dynamoWriteUnits).toBe(writes + events.length);
    const batchReads = ours.filter((request) => request.operation === 'BatchGetItem').length;
    expect(units.dynamoReadUnits).toBe((reads - batchReads) * 0.5 + batchReads * 1);
  });
});
