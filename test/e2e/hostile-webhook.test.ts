import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { http, postJson } from '../support/http.ts';
import { callEvent, textEvent, uniqueId } from '../support/events.ts';

/** What a hostile sender tries on the webhook: metadata keys named like prototype properties, odd recording links. */
let twin: TestTwin;
beforeAll(async () => {
  twin = await startTestTwin();
});
afterAll(() => twin?.close());

const eventsUrl = (token: string) => `${twin.webhookUrl}/api/v1/webhooks/${token}/events`;

async function storedEvent(sourceId: string, externalId: string) {
  const result = await twin.dynamo.send(
    new GetCommand({ TableName: twin.twin.tables.inboundEvents, Key: { source_id: sourceId, external_id: externalId } }),
  );
  return result.Item;
}

/**
 * The body is JSON text: in an object literal `__proto__` would set the prototype, while JSON.parse (and so the
 * service) reads it as an ordinary own key.
 */
function eventText(externalId: string, metadataJson: string): string {
  const event = JSON.stringify(callEvent({ external_id: externalId, metadata: {} }));
  return event.replace('"metadata":{}', `"metadata":${metadataJson}`);
}

const HOSTILE_METADATA =
  '{"constructor":"c","__proto__":{"polluted":true},"toString":1,"hasOwnProperty":true,"valueOf":"v","prototype":2.5,"direction":"inbound"}';

describe('metadata keys named like prototype properties', () => {
  it('accepts the event with 201, answers its repeat with 200 duplicate, and the schema lists every key with its type', async () => {
    const link = await boundLink(twin, 'calls');
    const externalId = 'hostile-metadata-1';
    const body = eventText(externalId, HOSTILE_METADATA);

    const first = await postJson(eventsUrl(link.token), body);
    const repeat = await postJson(eventsUrl(link.token), body);

    expect(first.status).toBe(201);
    expect(first.body).toEqual({ status: 'accepted', external_id: externalId, event_id: expect.any(Number), messages: 0 });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual({ status: 'duplicate', external_id: externalId, event_id: first.body.event_id });

    const stored = await storedEvent(link.sourceId, externalId);
    expect(stored).toMatchObject({ state: 'queued', event_id: first.body.event_id, direction: 'inbound' });
    expect(gunzipSync(stored!.body_gzip).toString()).toBe(body);

    const schema = await twin.admin('links', 'schema', link.linkId);
    expect(Object.entries(schema.fields).sort()).toEqual(
      [
        ['__proto__', 'string'],
        ['constructor', 'string'],
        ['direction', 'string'],
        ['hasOwnProperty', 'boolean'],
        ['prototype', 'number'],
        ['toString', 'number'],
        ['valueOf', 'string'],
      ].sort(),
    );
  });

  it('merges such keys across events, the newest event deciding the type', async () => {
    const link = await boundLink(twin, 'calls');
    expect((await postJson(eventsUrl(link.token), eventText('older', '{"toString":"text","valueOf":1}'))).status).toBe(201);
    expect((await postJson(eventsUrl(link.token), eventText('newer', '{"toString":true,"__proto__":3}'))).status).toBe(201);

    const schema = await twin.admin('links', 'schema', link.linkId);

    expect(Object.entries(schema.fields).sort()).toEqual(
      [
        ['__proto__', 'number'],
        ['toString', 'boolean'],
        ['valueOf', 'number'],
      ].sort(),
    );
  });
});

describe('recording links with a backslash', () => {
  it('refuses https://evil.com\\@127.0.0.1/x with 400 on audio.url and stores nothing', async () => {
    const link = await boundLink(twin, 'calls');
    const event = callEvent({ external_id: 'backslash-1' });
    event.audio = { ...event.audio, url: 'https://evil.com\\@127.0.0.1/x' };

    const response = await postJson(eventsUrl(link.token), event);

    expect(response.status).toBe(400);
    expect(response.body.error).toBe('Validation error');
    expect(response.body.details[0]).toEqual({ field: 'audio.url', message: 'must not contain backslashes' });
    expect(await storedEvent(link.sourceId, 'backslash-1')).toBeUndefined();
  });
});

describe('bodies that are not UTF-8, or that would swell as text', () => {
  const withStatus = (externalId: string, status: Buffer) => {
    const [before, after] = JSON.stringify(callEvent({ external_id: externalId, status: 'MARK' })).split('MARK');
    return Buffer.concat([Buffer.from(before!), status, Buffer.from(after!)]);
  };

  it('refuses invalid UTF-8 with 400 on the body, under any Content-Type, and stores nothing (never a body altered to U+FFFD)', async () => {
    const link = await boundLink(twin, 'calls');
    const cases: [string, Buffer, Record<string, string>][] = [
      ['utf8-bad-1', Buffer.from([0x41, 0xff, 0xfe]), {}],
      ['utf8-bad-2', Buffer.from([0xc0, 0xaf]), { 'content-type': 'text/plain' }],
      ['utf8-bad-3', Buffer.from([0xed, 0xa0, 0x80]), { 'content-type': 'application/json; charset=utf-8' }],
    ];
    for (const [externalId, bytes, headers] of cases) {
      const response = await http(eventsUrl(link.token), { method: 'POST', body: withStatus(externalId, bytes), headers });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'Validation error', details: [{ field: 'body', message: 'must be valid UTF-8 JSON' }] });
      expect(await storedEvent(link.sourceId, externalId)).toBeUndefined();
    }
    // The same event in UTF-8 is taken, and stored byte for byte.
    const valid = withStatus('utf8-good', Buffer.from('Aé'));
    expect((await http(eventsUrl(link.token), { method: 'POST', body: valid })).status).toBe(201);
    expect(gunzipSync((await storedEvent(link.sourceId, 'utf8-good'))!.body_gzip).equals(valid)).toBe(true);
  });

  it('refuses a raw U+FFFD in a JSON body (the gateway puts it for bytes that were not UTF-8), takes it escaped or as base64', async () => {
    const link = await boundLink(twin, 'calls');
    const raw = await http(eventsUrl(link.token), { method: 'POST', body: withStatus('fffd-raw', Buffer.from('\ufffd')) });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({ error: 'Validation error', details: [{ field: 'body', message: 'must be valid UTF-8 JSON' }] });
    expect(await storedEvent(link.sourceId, 'fffd-raw')).toBeUndefined();
    const escaped = await http(eventsUrl(link.token), { method: 'POST', body: withStatus('fffd-escaped', Buffer.from('\\ufffd')) });
    expect(escaped.status).toBe(201);
    // Not text to the HTTP API: handed over as the bytes sent, where U+FFFD is what the sender wrote.
    const binary = withStatus('fffd-binary', Buffer.from('\ufffd'));
    const asBytes = await http(eventsUrl(link.token), {
      method: 'POST',
      body: binary,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(asBytes.status).toBe(201);
    expect(gunzipSync((await storedEvent(link.sourceId, 'fffd-binary'))!.body_gzip).equals(binary)).toBe(true);
  });

  it('answers a body of control bytes 400 as base64; as JSON text 6 bytes each, 1 MiB of them passes Lambda 6 MB (the gateway 500)', async () => {
    const link = await boundLink(twin, 'calls');
    // No Content-Type: the HTTP API hands the body over as base64, far under Lambda's 6 MB.
    const asBase64 = await http(eventsUrl(link.token), {
      method: 'POST',
      body: Buffer.alloc(1024 * 1024, 1),
      headers: { 'content-type': '' },
    });
    expect(asBase64.status).toBe(400);
    expect(asBase64.body.details).toEqual([{ field: 'body', message: 'must be valid UTF-8 JSON' }]);
    // As JSON, it is text in the event (each control byte escaped in 6 bytes): under 1 MiB less 2 KB the event still fits...
    const justFits = await http(eventsUrl(link.token), { method: 'POST', body: Buffer.alloc(1024 * 1024 - 2048, 1) });
    expect(justFits.status).toBe(400);
    // ...at 1 MiB it does not, and Lambda refuses the invocation: the HTTP API's own 500 (functions/inbound/README.md).
    const tooBig = await http(eventsUrl(link.token), { method: 'POST', body: Buffer.alloc(1024 * 1024, 1) });
    expect(tooBig.status).toBe(500);
    expect(tooBig.body).toEqual({ message: 'Internal Server Error' });
  });

  it('measures 1 MiB on the bytes sent: 700 KB of invalid bytes is 400, not 413', async () => {
    const link = await boundLink(twin, 'calls');
    const response = await http(eventsUrl(link.token), { method: 'POST', body: withStatus('swollen', Buffer.alloc(700_000, 0xff)) });
    expect(response.status).toBe(400);
  });
});

describe('metadata nested past any real event', () => {
  it('refuses metadata nested 20,000 levels deep with 400 on metadata (the collection could never hand it on), and takes 60 levels', async () => {
    const link = await boundLink(twin, 'calls');
    const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

    const deep = await postJson(eventsUrl(link.token), eventText('deep-metadata', `{"k":${nested(20_000)}}`));
    expect(deep.status).toBe(400);
    expect(deep.body.details).toEqual([{ field: 'metadata', message: 'must not nest objects and arrays more than 64 levels deep' }]);
    expect(await storedEvent(link.sourceId, 'deep-metadata')).toBeUndefined();

    expect((await postJson(eventsUrl(link.token), eventText('nested-metadata', `{"k":${nested(60)}}`))).status).toBe(201);
  });
});

describe('text that is not well-formed Unicode', () => {
  /** The event as JSON text with `\ud800` (a lone surrogate once parsed) where the marker stood. */
  const withLoneSurrogate = (event: object) => JSON.stringify(event).replace('LONE', '\\ud800');

  it.each([
    ['source_channel', (id: string) => callEvent({ external_id: id, source_channel: 'LONE' })],
    ['status', (id: string) => callEvent({ external_id: id, status: 'LONE' })],
    ['metadata.operator', (id: string) => callEvent({ external_id: id, metadata: { direction: 'inbound', operator: 'LONE' } })],
    ['metadata.deep.0.name', (id: string) => callEvent({ external_id: id, metadata: { deep: [{ name: 'LONE' }] } })],
    ['metadata.k\ufffd', (id: string) => callEvent({ external_id: id, metadata: { kLONE: 1 } })],
  ])('refuses a lone surrogate in a call’s %s with 400 naming it, and stores nothing', async (field, event) => {
    const link = await boundLink(twin, 'calls');
    const externalId = uniqueId('lone');

    const response = await postJson(eventsUrl(link.token), withLoneSurrogate(event(externalId)));

    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      error: 'Validation error',
      details: [{ field, message: expect.stringContaining('well-formed Unicode') }],
    });
    expect(await storedEvent(link.sourceId, externalId)).toBeUndefined();
    expect(await twin.admin('links', 'filters', link.linkId)).toMatchObject({ channels: [], directions: [] });
  });

  it.each([
    ['messages.1.text', { text: 'LONE' }],
    ['messages.1.author_name', { author_name: 'LONE' }],
    ['messages.1.author_id', { author_id: 'LONE' }],
  ])('refuses a lone surrogate in a dialog’s %s with 400 naming it, and stores nothing', async (field, fields) => {
    const link = await boundLink(twin, 'dialogs');
    const event = textEvent(3);
    event.messages[1] = { ...event.messages[1]!, ...fields };

    const response = await postJson(eventsUrl(link.token), withLoneSurrogate(event));

    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ field, message: 'must be well-formed Unicode (no lone surrogate)' }]);
    expect(await storedEvent(link.sourceId, event.external_id)).toBeUndefined();
  });

  it('takes the same dialog with the surrogate pair whole (an emoji)', async () => {
    const link = await boundLink(twin, 'dialogs');
    const event = textEvent(2, { source_channel: 'chat 😀' });
    event.messages[0] = { ...event.messages[0]!, text: 'LONE' };

    const response = await postJson(eventsUrl(link.token), JSON.stringify(event).replace('LONE', '\\ud83d\\ude00'));

    expect(response.status).toBe(201);
    expect(await twin.admin('links', 'filters', link.linkId)).toMatchObject({ channels: ['chat 😀'] });
  });
});

describe('filter values an operator could not read as they are', () => {
  it.each([
    ['NUL', '\u0000'],
    ['a right-to-left override', '\u202e'],
    ['a first-strong isolate', '\u2068'],
  ])('refuses %s in source_channel and metadata.direction with 400 naming the field, and lists neither', async (_, character) => {
    const link = await boundLink(twin, 'calls');
    const message = 'must not contain control characters or bidirectional formatting characters (it is shown in filter lists)';

    const channel = await postJson(eventsUrl(link.token), callEvent({ source_channel: `web${character}site` }));
    const direction = await postJson(eventsUrl(link.token), callEvent({ metadata: { direction: `in${character}bound` } }));

    expect(channel.status).toBe(400);
    expect(channel.body.details).toEqual([{ field: 'source_channel', message }]);
    expect(direction.status).toBe(400);
    expect(direction.body.details).toEqual([{ field: 'metadata.direction', message }]);
    expect(await twin.admin('links', 'filters', link.linkId)).toMatchObject({ channels: [], directions: [] });
  });
});
