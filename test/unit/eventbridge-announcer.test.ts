import type { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { describe, expect, it } from 'vitest';
import { eventBridgeAnnouncer } from '#collection/eventbridge-announcer.ts';
import { HANDOFF_DETAIL_TYPE, HANDOFF_EVENT_SOURCE, type HandoffAnnouncement } from '#collection/handoff-store.ts';

const announcement: HandoffAnnouncement = {
  bucket: 'b',
  key: 'handoff/src/1.json',
  event_id: 1,
  external_id: 'x',
  source_id: 'src',
  link_id: 'lnk',
  type: 'text',
};

function client(answer: object) {
  const sent: PutEventsCommand[] = [];
  return { sent, client: { send: async (command: PutEventsCommand) => (sent.push(command), answer) } as unknown as EventBridgeClient };
}

describe('the EventBridge announcer', () => {
  it('puts one entry on the bus naming the hand-off', async () => {
    const { sent, client: bus } = client({ FailedEntryCount: 0, Entries: [{ EventId: 'e' }] });
    await eventBridgeAnnouncer(bus, 'handoffs').announce(announcement);
    expect(sent.map((command) => command.input.Entries)).toEqual([
      [{ EventBusName: 'handoffs', Source: HANDOFF_EVENT_SOURCE, DetailType: HANDOFF_DETAIL_TYPE, Detail: JSON.stringify(announcement) }],
    ]);
  });

  it('fails when PutEvents answers 200 with a failed entry, so the batch is retried', async () => {
    const { client: bus } = client({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'ThrottlingException' }] });
    await expect(eventBridgeAnnouncer(bus, 'handoffs').announce(announcement)).rejects.toThrow(
      'Hand-off announcement refused: ThrottlingException',
    );
  });
});
