import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { http, postJson } from '../support/http.ts';
import { callEvent, message, textEvent } from '../support/events.ts';

let twin: TestTwin;
let calls: Awaited<ReturnType<typeof boundLink>>;
let dialogs: Awaited<ReturnType<typeof boundLink>>;
const eventsUrl = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/events`;
const pingUrl = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/ping`;

async function storedEvent(sourceId: string, externalId: string) {
  const result = await twin.dynamo.send(
    new GetCommand({ TableName: twin.twin.tables.inboundEvents, Key: { source_id: sourceId, external_id: externalId } }),
  );
  return result.Item;
}

beforeAll(async () => {
  twin = await startTestTwin();
  calls = await boundLink(twin, 'calls');
  dialogs = await boundLink(twin, 'dialogs');
});
afterAll(() => twin.close());

describe('POST /events: acceptance', () => {
  it('accepts a new call with 201, an integer event_id and messages 0, and queues it whole', async () => {
    const event = callEvent();
    const response = await postJson(eventsUrl(calls.token), event);

    expect(response.status).toBe(201);
    expect(response.body).toEqual({ status: 'accepted', external_id: event.external_id, event_id: expect.any(Number), messages: 0 });
    expect(Number.isInteger(response.body.event_id)).toBe(true);
    const stored = await storedEvent(calls.sourceId, event.external_id);
    expect(stored).toMatchObject({
      state: 'queued',
      type: 'call',
      event_id: response.body.event_id,
      source_channel: 'website',
      direction: 'inbound',
    });
    expect(JSON.parse(gunzipSync(stored!.body_gzip).toString())).toEqual(event);
    expect(stored!.expires_at * 1000 - Date.now()).toBeGreaterThan(29.9 * 86_400_000);
  });

  it('accepts a dialog with the number of messages', async () => {
    const response = await postJson(eventsUrl(dialogs.token), textEvent(3));
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ status: 'accepted', messages: 3 });
  });

  it('answers a repeat with 200 duplicate, the first event_id, no messages, and keeps the first variant', async () => {
    const first = textEvent(2);
    const accepted = await postJson(eventsUrl(dialogs.token), first);
    const repeat = await postJson(eventsUrl(dialogs.token), { ...textEvent(5), external_id: first.external_id });

    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual({ status: 'duplicate', external_id: first.external_id, event_id: accepted.body.event_id });
    const stored = await storedEvent(dialogs.sourceId, first.external_id);
    expect(stored).toMatchObject({ message_count: 2, event_id: accepted.body.event_id });
  });

  it('gives event ids unique across sources', async () => {
    const ids = await Promise.all([
      postJson(eventsUrl(calls.token), callEvent()),
      postJson(eventsUrl(dialogs.token), textEvent(1)),
      postJson(eventsUrl(calls.token), callEvent()),
    ]);
    const eventIds = ids.map((response) => response.body.event_id);
    expect(new Set(eventIds).size).toBe(3);
  });

  it('accepts exactly one of many parallel copies of a new event', async () => {
    const event = callEvent();
    const responses = await Promise.all(Array.from({ length: 24 }, () => postJson(eventsUrl(calls.token), event)));

    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 200)).toHaveLength(23);
    expect(new Set(responses.map((response) => response.body.event_id)).size).toBe(1);
  });

  it('stores a near-1 MiB 2000-message dialog in S3 and returns 201 only after it is durable', async () => {
    // Text that does not compress, so its gzip is far over what an item keeps inline.
    const messages = Array.from({ length: 2000 }, (_, i) => ({ ...message(i), text: randomBytes(300).toString('base64') }));
    const event = textEvent(2000, { messages });
    const body = JSON.stringify(event);
    expect(body.length).toBeGreaterThan(1_000_000);
    expect(body.length).toBeLessThanOrEqual(1024 * 1024);

    const response = await postJson(eventsUrl(dialogs.token), body);

    expect(response.status).toBe(201);
    expect(response.body.messages).toBe(2000);
    const stored = await storedEvent(dialogs.sourceId, event.external_id);
    expect(stored?.body_gzip).toBeUndefined();
    expect(stored?.body_s3_key).toMatch(/^inbound\//);
    const object = await twin.s3.send(new GetObjectCommand({ Bucket: twin.twin.bucket, Key: stored!.body_s3_key }));
    const bytes = await object.Body!.transformToByteArray();
    expect(gunzipSync(bytes).toString()).toBe(body);
  });

  it('accepts an event again once the stored one has passed its 30 days, even before TTL deletes it', async () => {
    const event = callEvent();
    const first = await postJson(eventsUrl(calls.token), event);
    await twin.dynamo.send(
      new UpdateCommand({
        TableName: twin.twin.tables.inboundEvents,
        Key: { source_id: calls.sourceId, external_id: event.external_id },
        UpdateExpression: 'SET expires_at = :past',
        ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
      }),
    );
    const again = await postJson(eventsUrl(calls.token), event);
    expect(again.status).toBe(201);
    expect(again.body.event_id).not.toBe(first.body.event_id);
  });
});

describe('POST /events: validation (400 in the error shape)', () => {
  it('refuses invalid JSON', async () => {
    const response = await postJson(eventsUrl(calls.token), '{"type":"call",');
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'Validation error', details: [{ field: 'body', message: expect.any(String) }] });
  });

  it('refuses a body that is not an object', async () => {
    const response = await postJson(eventsUrl(calls.token), '[1,2]');
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ field: 'body', message: 'must be a JSON object' }]);
  });

  it('refuses an event whose type does not match the link', async () => {
    const response = await postJson(eventsUrl(calls.token), textEvent(1));
    expect(response.status).toBe(400);
    expect(response.body.details).toContainEqual({ field: 'type', message: 'this link accepts only events of type call' });
  });

  it('names nested fields in dot notation', async () => {
    const event = textEvent(2);
    (event.messages[1] as Record<string, unknown>).text = null;
    const response = await postJson(eventsUrl(dialogs.token), event);
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ field: 'messages.1.text', message: expect.any(String) }]);
  });

  it('refuses a call without audio.url or audio.format', async () => {
    const response = await postJson(eventsUrl(calls.token), callEvent({ audio: { duration_seconds: 5 } }));
    expect(response.status).toBe(400);
    expect(response.body.details.map((issue: { field: string }) => issue.field).sort()).toEqual(['audio.format', 'audio.url']);
  });

  it('refuses a date without offset and an occurred_at outside the window', async () => {
    const noOffset = await postJson(eventsUrl(calls.token), callEvent({ occurred_at: '2026-11-01T10:00:00' }));
    const tooOld = await postJson(eventsUrl(calls.token), callEvent({ occurred_at: '2020-01-01T10:00:00Z' }));
    expect(noOffset.status).toBe(400);
    expect(noOffset.body.details[0].field).toBe('occurred_at');
    expect(tooOld.status).toBe(400);
    expect(tooOld.body.details[0]).toEqual({ field: 'occurred_at', message: 'must be between one year ago and one day ahead' });
  });

  it('refuses more than 2000 messages', async () => {
    const response = await postJson(eventsUrl(dialogs.token), textEvent(2001, {}, 5));
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ field: 'messages', message: 'must hold at most 2000 messages' }]);
  });

  it.each([
    ['http://records.example.com/1.mp3', 'scheme must be https'],
    ['https://127.0.0.1/1.mp3', 'host must be a public address'],
    ['https://2130706433/1.mp3', 'host is an ambiguous numeric address'],
    ['https://[::ffff:10.0.0.1]/1.mp3', 'host must be a public address'],
    ['https://u:p@records.example.com/1.mp3', 'must not contain credentials'],
  ])('refuses the recording link %s', async (url, message) => {
    const response = await postJson(eventsUrl(calls.token), callEvent({ audio: { url, format: 'mp3' } }));
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ field: 'audio.url', message }]);
  });

  it('refuses an invalid repeat of an accepted event with 400, not duplicate', async () => {
    const event = callEvent();
    expect((await postJson(eventsUrl(calls.token), event)).status).toBe(201);
    const invalidRepeat = await postJson(eventsUrl(calls.token), { ...event, occurred_at: 'yesterday' });
    expect(invalidRepeat.status).toBe(400);
  });

  it('does not store a refused event', async () => {
    const event = callEvent({ status: 'x'.repeat(33) });
    expect((await postJson(eventsUrl(calls.token), event)).status).toBe(400);
    expect(await storedEvent(calls.sourceId, event.external_id)).toBeUndefined();
  });
});

describe('link states', () => {
  it('pings a bound link', async () => {
    const response = await http(pingUrl(calls.token));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok', state: 'bound', connector_type: 'calls' });
  });

  it('pings an issued link as issued and refuses its events with 409', async () => {
    const issued = await twin.admin('links', 'issue', '--type', 'dialogs');
    const ping = await http(pingUrl(issued.token));
    const post = await postJson(eventsUrl(issued.token), textEvent(1));
    expect(ping.body).toEqual({ status: 'ok', state: 'issued', connector_type: 'dialogs' });
    expect(post.status).toBe(409);
    expect(post.body).toEqual({ error: expect.stringContaining('issued') });
  });

  it('answers 404 for an unknown token', async () => {
    const token = `whk_${'A'.repeat(43)}`;
    expect((await http(pingUrl(token))).status).toBe(404);
    const post = await postJson(eventsUrl(token), callEvent());
    expect(post.status).toBe(404);
    expect(post.body).toEqual({ error: 'Unknown webhook link' });
  });
});

describe('what the admin sees of a source', () => {
  it('builds the metadata schema from first-level keys and the filter value lists from accepted events', async () => {
    const link = await boundLink(twin, 'calls');
    expect(await twin.admin('links', 'filters', link.linkId)).toMatchObject({ channels: [], directions: [] });
    await postJson(
      eventsUrl(link.token),
      callEvent({ source_channel: 'site-a', metadata: { direction: 'inbound', score: 1, vip: false, tags: ['x'] } }),
    );
    await postJson(eventsUrl(link.token), callEvent({ source_channel: 'site-b', metadata: { direction: 'outbound', score: 'high' } }));

    const schema = await twin.admin('links', 'schema', link.linkId);
    const filters = await twin.admin('links', 'filters', link.linkId);

    expect(schema.fields).toEqual({ direction: 'string', score: 'string', vip: 'boolean', tags: 'string' });
    expect(filters).toMatchObject({ channels: ['site-a', 'site-b'], directions: ['inbound', 'outbound'] });
  });

  it('lists every channel an event may carry, 64 characters counted as the schema counts them (an emoji is one)', async () => {
    const link = await boundLink(twin, 'calls');
    const emoji = '😀'.repeat(64);
    expect(
      (await postJson(eventsUrl(link.token), callEvent({ source_channel: emoji, metadata: { direction: '😀'.repeat(40) } }))).status,
    ).toBe(201);
    expect((await postJson(eventsUrl(link.token), callEvent({ metadata: { direction: '😀'.repeat(65) } }))).status).toBe(201);

    const filters = await twin.admin('links', 'filters', link.linkId);
    expect(filters.channels).toContain(emoji);
    expect(filters.directions).toEqual(['😀'.repeat(40)]);
  });

  it('lists links with a token prefix only', async () => {
    const { links } = await twin.admin('links', 'list');
    const listed = links.find((link: { link_id: string }) => link.link_id === calls.linkId);
    expect(listed).toMatchObject({ state: 'bound', connector_type: 'calls', source_id: calls.sourceId });
    expect(JSON.stringify(links)).not.toContain(calls.token);
    expect(calls.token.startsWith(listed.token_prefix)).toBe(true);
    expect(listed.token_prefix.length).toBeLessThan(12);
  });
});
