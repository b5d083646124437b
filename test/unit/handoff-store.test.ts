import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { createHandoffStore, handoffKey, putEventsChunks, type HandoffAnnouncement } from '#collection/handoff-store.ts';
import type { NormalizedConversation } from '#collection/conversation.ts';
import { HANDOFF_READS_IN_FLIGHT } from '#shared/limits.ts';
import { emptyCostUnits, runMetered, type Metering } from '#shared/metering/cost-meter.ts';

/**
 * Reading a source's hand-offs back (the operator's `handoffs`): keys page by page as S3 lists them (text order, 1,000 a
 * page), conversations oldest event first, never more than HANDOFF_READS_IN_FLIGHT read ahead of the caller.
 */
const SOURCE = 'src_1';
const COUNT = 2500;
const PAGE = 1000;
const textOrder = (keys: string[]) => [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

function fakeS3(keys: string[], options: { failing?: number } = {}) {
  const seen = { lists: 0, gets: 0, inFlight: 0, mostInFlight: 0 };
  const send = async (command: unknown) => {
    if (command instanceof ListObjectsV2Command) {
      seen.lists += 1;
      const from = Number(command.input.ContinuationToken ?? 0);
      const truncated = from + PAGE < keys.length;
      return {
        Contents: keys.slice(from, from + PAGE).map((Key) => ({ Key })),
        IsTruncated: truncated,
        NextContinuationToken: truncated ? String(from + PAGE) : undefined,
      };
    }
    if (command instanceof GetObjectCommand) {
      const eventId = Number(/(\d+)\.json$/.exec(command.input.Key!)![1]);
      // At once, before the reads started earlier answer: its failure waits for its turn.
      if (eventId === options.failing) throw Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown' });
      seen.gets += 1;
      seen.inFlight += 1;
      seen.mostInFlight = Math.max(seen.mostInFlight, seen.inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      seen.inFlight -= 1;
      return { Body: { transformToString: async () => `{"event_id":${eventId}}` } };
    }
    throw new Error('unexpected command');
  };
  const store = createHandoffStore({ send } as unknown as S3Client, 'bucket', { announce: () => Promise.reject(new Error('read only')) });
  return { store, seen };
}

const handoffKeys = (count: number) =>
  textOrder(Array.from({ length: count }, (_, i) => handoffKey({ source_id: SOURCE, event_id: i + 1 })));
/** Lets every GET started so far finish (each takes one turn of the event loop in the fake). */
const settle = async () => {
  for (let turn = 0; turn < 4; turn++) await new Promise((resolve) => setImmediate(resolve));
};

describe('reading hand-offs back', () => {
  it('reads every hand-off past the first page, oldest event first, never more than the bound at once', async () => {
    const { store, seen } = fakeS3(handoffKeys(COUNT));
    const eventIds: number[] = [];
    for await (const handoff of store.read(SOURCE)) {
      eventIds.push(handoff.event_id);
      expect(JSON.parse(handoff.text)).toMatchObject({ event_id: handoff.event_id });
    }
    expect(eventIds).toEqual(Array.from({ length: COUNT }, (_, i) => i + 1));
    expect(seen.lists).toBe(3);
    expect(seen.gets).toBe(COUNT);
    expect(HANDOFF_READS_IN_FLIGHT).toBe(8);
    expect(seen.mostInFlight).toBe(HANDOFF_READS_IN_FLIGHT);
  });

  it('reads no further ahead of a caller who has not taken the next one', async () => {
    const { store, seen } = fakeS3(handoffKeys(100));
    const reading = store.read(SOURCE);
    expect((await reading.next()).value).toMatchObject({ event_id: 1 });
    await settle();
    expect(seen.gets).toBe(HANDOFF_READS_IN_FLIGHT);
    expect((await reading.next()).value).toMatchObject({ event_id: 2 });
    await settle();
    expect(seen.gets).toBe(HANDOFF_READS_IN_FLIGHT + 1);
    await reading.return(undefined);
  });

  it('fails in the turn of a read that failed, while earlier ones were awaited, with its error', async () => {
    const { store } = fakeS3(handoffKeys(20), { failing: 5 });
    const eventIds: number[] = [];
    await expect(
      (async () => {
        for await (const handoff of store.read(SOURCE)) eventIds.push(handoff.event_id);
      })(),
    ).rejects.toThrow('Please reduce your request rate.');
    expect(eventIds).toEqual([1, 2, 3, 4]);
  });

  it('refuses an object under the source that is not named after an event', async () => {
    const { store } = fakeS3([...handoffKeys(3), `handoff/${SOURCE}/notes.txt`]);
    await expect(store.read(SOURCE).next()).rejects.toThrow(
      `handoff/${SOURCE}/notes.txt is not a hand-off: its name is not <event_id>.json`,
    );
  });
});

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
