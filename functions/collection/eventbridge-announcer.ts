import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { HANDOFF_DETAIL_TYPE, HANDOFF_EVENT_SOURCE, type Announcer } from './handoff-store.ts';

/** On AWS: one event per hand-off on the stack's own bus, for the analysis platform's rules to pick up. */
export function eventBridgeAnnouncer(client: EventBridgeClient, busName: string): Announcer {
  return {
    async announce(announcement) {
      const result = await client.send(
        new PutEventsCommand({
          Entries: [
            { EventBusName: busName, Source: HANDOFF_EVENT_SOURCE, DetailType: HANDOFF_DETAIL_TYPE, Detail: JSON.stringify(announcement) },
          ],
        }),
      );
      // PutEvents answers 200 with per-entry failures: an unannounced hand-off must fail the batch, to be retried.
      if (result.FailedEntryCount) throw new Error(`Hand-off announcement refused: ${result.Entries?.[0]?.ErrorCode ?? 'unknown'}`);
    },
  };
}
