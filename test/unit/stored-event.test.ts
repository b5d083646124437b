import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseAcceptedBody, parseInboundEvent, type InboundEvent } from '#inbound/event-schema.ts';
import { newStoredEvent, packBody, readBody, writeBody } from '#inbound/stored-event.ts';
import { INLINE_BODY_MAX_BYTES, MAX_REQUEST_BODY_BYTES } from '#shared/limits.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { InMemoryBodyStore } from '../support/fakes/body-store.ts';
import { awsError } from '../support/fakes/faults.ts';

const WORDS = [
  'здравствуйте',
  'заказ',
  'доставка',
  'спасибо',
  'оператор',
  'возврат',
  'hello',
  'order',
  'refund',
  'tomorrow',
  'please',
  'номер',
  '12345',
  'где',
  'мой',
];

/** A dialog of chat-like text from a fixed seed: Cyrillic and Latin words, compressing about as real dialogs do. */
function chat(messages: number, seed: number): Buffer {
  let state = seed;
  const random = (below: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state % below;
  };
  const event = textEvent(messages);
  for (const message of event.messages) message.text = Array.from({ length: 3 + random(20) }, () => WORDS[random(WORDS.length)]).join(' ');
  return Buffer.from(JSON.stringify(event));
}

const gzipOf = (raw: Buffer) => {
  const packed = packBody(raw, 'src_1', 7);
  return Buffer.from(packed.object?.gzip ?? packed.attributes.body_gzip!);
};

function accepted(text: string): InboundEvent {
  const parsed = parseAcceptedBody(JSON.parse(text));
  if (!parsed.ok) throw new Error(`not an event: ${JSON.stringify(parsed.issues)}`);
  return parsed.event;
}

describe('packing a received body for storage', () => {
  it('keeps the exact bytes received, whatever they are', () => {
    const bodies = [Buffer.alloc(0), Buffer.from([0xff, 0xfe, 0x00, 0xc3]), chat(50, 1), Buffer.alloc(MAX_REQUEST_BODY_BYTES, 'é')];
    for (const raw of bodies) {
      const gzip = gzipOf(raw);
      expect(gzip.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
      expect(gunzipSync(gzip).equals(raw)).toBe(true);
      expect(packBody(raw, 'src_1', 7).attributes.body_bytes).toBe(raw.byteLength);
    }
  });

  it('keeps inside the item every body that fitted there at the default level', () => {
    let nearTheLimit = 0;
    for (let messages = 100; messages <= 1200; messages += 25) {
      const raw = chat(messages, messages);
      const atDefaultLevel = gzipSync(raw).byteLength;
      if (atDefaultLevel > INLINE_BODY_MAX_BYTES * 0.7 && atDefaultLevel <= INLINE_BODY_MAX_BYTES) nearTheLimit += 1;
      if (atDefaultLevel <= INLINE_BODY_MAX_BYTES) {
        const packed = packBody(raw, 'src_1', 7);
        expect(packed.object).toBeUndefined();
        expect(packed.attributes.body_gzip!.byteLength).toBeLessThanOrEqual(INLINE_BODY_MAX_BYTES);
      }
    }
    expect(nearTheLimit).toBeGreaterThan(3);
  });

  it('puts a larger body in an object under inbound/, at the fastest level', () => {
    const raw = chat(2000, 7);
    expect(gzipSync(raw, { level: 1 }).byteLength).toBeGreaterThan(INLINE_BODY_MAX_BYTES * 1.5);
    const packed = packBody(raw, 'src_1', 7);
    expect(packed.attributes).toEqual({ body_gzip: undefined, body_s3_key: 'inbound/src_1/7.json.gz', body_bytes: raw.byteLength });
    expect(packed.object!.key).toBe('inbound/src_1/7.json.gz');
    expect(packed.object!.gzip.equals(gzipSync(raw, { level: 1 }))).toBe(true);
  });
});

describe('the item of an accepted event', () => {
  it('holds the attributes items already stored hold, under the same names', () => {
    const nowMs = Date.parse('2025-03-10T12:00:00.000Z');
    const text = JSON.stringify(
      callEvent({
        external_id: 'call-1',
        occurred_at: '2025-03-10T14:59:00+03:00',
        source_channel: 'sip',
        metadata: { direction: 'inbound', score: 4.5, vip: true, tags: ['a'] },
      }),
    );
    const raw = Buffer.from(text);
    const body = packBody(raw, 'src_1', 42);

    const stored = newStoredEvent(accepted(text), { sourceId: 'src_1', eventId: 42 }, body, nowMs);

    expect(stored).toStrictEqual({
      source_id: 'src_1',
      external_id: 'call-1',
      event_id: 42,
      type: 'call',
      state: 'queued',
      received_at: '2025-03-10T12:00:00.000Z',
      received_key: '2025-03-10T12:00:00.000Z#0000000000000042',
      occurred_at: '2025-03-10T14:59:00+03:00',
      message_count: 0,
      source_channel: 'sip',
      direction: 'inbound',
      metadata_fields: [
        ['direction', 'string'],
        ['score', 'number'],
        ['vip', 'boolean'],
        ['tags', 'string'],
      ],
      body_gzip: body.attributes.body_gzip,
      body_s3_key: undefined,
      body_bytes: raw.byteLength,
      delivery_failures: 0,
      expires_at: Date.parse('2025-04-09T12:00:00.000Z') / 1000,
    });
  });

  it('counts a dialog’s messages and takes no direction from it', () => {
    const text = JSON.stringify(textEvent(3, { metadata: { direction: 'inbound' } }));
    const stored = newStoredEvent(accepted(text), { sourceId: 'src_1', eventId: 1 }, packBody(Buffer.from(text), 'src_1', 1), Date.now());
    expect(stored).toMatchObject({ type: 'text', message_count: 3, direction: undefined });
  });
});

describe('reading a stored body back', () => {
  it('answers the sender’s text as received and the event as accepted, from the item or the bucket', async () => {
    const bodies = new InMemoryBodyStore();
    const small = JSON.stringify(callEvent({ surprise: true })).replace('"score":4.5', '"score":12345678901234567890123');
    const large = chat(2000, 3).toString('utf8');
    for (const text of [small, large]) {
      const body = packBody(Buffer.from(text), 'src_1', 9);
      await writeBody(bodies, body);

      const read = await readBody(bodies, body.attributes);

      expect(read).toEqual({ ok: true, text, event: accepted(text) });
      expect(read.ok && 'surprise' in read.event).toBe(false);
    }
    expect(bodies.faults.count('put')).toBe(1);
    expect(bodies.objects.get('inbound/src_1/9.json.gz')).toMatchObject({ contentType: 'application/json', contentEncoding: 'gzip' });
  });

  it('keeps an occurred_at that has left the acceptance window since: the window is checked at acceptance only', async () => {
    const text = JSON.stringify(callEvent({ occurred_at: '2019-06-01T10:00:00+03:00' }));
    expect(parseInboundEvent(JSON.parse(text))).toMatchObject({ ok: false, issues: [{ field: 'occurred_at' }] });

    const read = await readBody(new InMemoryBodyStore(), packBody(Buffer.from(text), 'src_1', 1).attributes);

    expect(read).toMatchObject({ ok: true, event: { occurred_at: '2019-06-01T10:00:00+03:00' } });
  });

  it('answers what is wrong with bytes that are no accepted body, and throws when the bucket fails', async () => {
    const bodies = new InMemoryBodyStore();
    expect(await readBody(bodies, { body_gzip: gzipSync('{"type":"text"') })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^stored body unreadable: /),
    });
    expect(await readBody(bodies, { body_gzip: Buffer.from('not gzip') })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^stored body unreadable: /),
    });
    expect(await readBody(bodies, { body_gzip: gzipSync('{"type":"call","external_id":"x"}') })).toEqual({
      ok: false,
      problem: 'stored event no longer parses: occurred_at, audio',
    });

    bodies.faults.failNext('get', awsError('AccessDenied', 'Access Denied'));
    await expect(readBody(bodies, { body_s3_key: 'inbound/src_1/1.json.gz' })).rejects.toThrow('Access Denied');
  });
});
