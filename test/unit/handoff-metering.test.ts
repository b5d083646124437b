import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { createHandoffStore, putEventsChunks, type HandoffAnnouncement } from '#collection/handoff-store.ts';
import type { NormalizedConversation } from '#collection/conversation.ts';
import { emptyCostUnits, runMetered, type Metering } from '#shared/metering/cost-meter.ts';

/** Each hand-off's announcement is an EventBridge custom event, billed per 64 KB chunk of its PutEvents entry. */
const conversation = (externalId: string) =>
  ({ event_id: 7, external_id: externalId, source_id: 'src', link_id: 'lnk', type: 'call' }) as unknown as NormalizedConversation;
const announcement = (externalId: string): HandoffAnnouncement => ({
  bucket: 'b',
  key: 'handoff/src/7.json',
  event_id: 7,
  external_id: externalId,
  source_id: 'src',
  link_id: 'lnk',
  type: 'call',
});

describe('the hand-off announcement’s EventBridge events', () => {
  it('are one per 64 KB of the entry (Source, DetailType and Detail as UTF-8)', () => {
    expect(putEventsChunks(announcement('call-1'))).toBe(1);
    const overhead = ['workflow-ingest-platform.collection', 'Conversation handed off', JSON.stringify(announcement(''))].reduce(
      (sum, part) => sum + Buffer.byteLength(part),
      0,
    );
    expect(putEventsChunks(announcement('x'.repeat(64 * 1024 - overhead)))).toBe(1);
    expect(putEventsChunks(announcement('x'.repeat(64 * 1024 - overhead + 1)))).toBe(2);
    // UTF-8 bytes, not characters: 'é' is two.
    expect(putEventsChunks(announcement('é'.repeat(Math.ceil((64 * 1024 - overhead + 1) / 2))))).toBe(2);
  });

  it('are recorded for each hand-off the announcer accepted, and not for one it refused', async () => {
    const s3 = { send: () => Promise.resolve({}) } as unknown as S3Client;
    let refuse = false;
    const store = createHandoffStore(s3, 'b', { announce: () => (refuse ? Promise.reject(new Error('refused')) : Promise.resolve()) });
    const metering: Metering = { units: emptyCostUnits(), startedAtMs: performance.now(), memoryMb: 512 };
    await runMetered(metering, async () => {
      await store.handOff(conversation('call-1'));
      await store.handOff(conversation('call-2'));
      refuse = true;
      await expect(store.handOff(conversation('call-3'))).rejects.toThrow('refused');
    });
    expect(metering.units.eventBridgeEvents).toBe(2);
  });
});
