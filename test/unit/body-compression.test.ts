import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compressBody } from '#inbound/body-compression.ts';
import { INLINE_BODY_MAX_BYTES, MAX_REQUEST_BODY_BYTES } from '#shared/limits.ts';
import { textEvent } from '../support/events.ts';

const WORDS = ['здравствуйте', 'заказ', 'доставка', 'спасибо', 'оператор', 'возврат', 'hello', 'order', 'refund', 'tomorrow', 'please', 'номер', '12345', 'где', 'мой'];

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

describe('compressing a received body for storage', () => {
  it('keeps the exact bytes received, whatever they are', () => {
    const bodies = [Buffer.alloc(0), Buffer.from([0xff, 0xfe, 0x00, 0xc3]), chat(50, 1), Buffer.alloc(MAX_REQUEST_BODY_BYTES, 'é')];
    for (const raw of bodies) {
      const compressed = compressBody(raw);
      expect(compressed.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
      expect(gunzipSync(compressed).equals(raw)).toBe(true);
    }
  });

  it('keeps inside the item every body that fitted there at the default level', () => {
    let nearTheLimit = 0;
    for (let messages = 100; messages <= 1200; messages += 25) {
      const raw = chat(messages, messages);
      const atDefaultLevel = gzipSync(raw).byteLength;
      if (atDefaultLevel > INLINE_BODY_MAX_BYTES * 0.7 && atDefaultLevel <= INLINE_BODY_MAX_BYTES) nearTheLimit += 1;
      if (atDefaultLevel <= INLINE_BODY_MAX_BYTES) expect(compressBody(raw).byteLength).toBeLessThanOrEqual(INLINE_BODY_MAX_BYTES);
    }
    expect(nearTheLimit).toBeGreaterThan(3);
  });

  it('uses the fastest level for a body stored outside the item either way', () => {
    const raw = chat(2000, 7);
    expect(gzipSync(raw, { level: 1 }).byteLength).toBeGreaterThan(INLINE_BODY_MAX_BYTES * 1.5);
    expect(compressBody(raw).equals(gzipSync(raw, { level: 1 }))).toBe(true);
  });
});
