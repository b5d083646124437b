import { handoffKey } from '#collection/handoff-store.ts';
import { handoffProblem } from './expected-conversation.ts';
import { repeatingFaults } from './fault-tally.ts';
import type { InvariantInput, Violate } from './invariants.ts';
import type { StoredAnnouncement } from './stored-state.ts';

/** The collection's function: a fault in it may have it hand a conversation off again in the same sweep. */
const COLLECT_FUNCTION = 'CollectBatch';

/**
 * The webhook API's side: every acknowledged event is stored once, under the source it was sent to and no other, with the
 * id it was answered with; the collection handed it off with what was sent, announced by exactly one sweep.
 */
export async function checkEvents(input: InvariantInput, violate: Violate): Promise<void> {
  const { record, stored } = input;
  for (const [externalId, sources] of record.sent) {
    for (const item of stored.events.get(externalId) ?? []) {
      if (!sources.has(item.source_id))
        violate(
          'acknowledged-stored-once',
          `${externalId}: stored under source ${item.source_id} (event ${item.event_id}), where it was never sent`,
        );
    }
  }
  for (const event of record.events.values()) {
    const items = (stored.events.get(event.externalId) ?? []).filter((item) => item.source_id === event.sourceId);
    if (items.length !== 1) {
      violate(
        'acknowledged-stored-once',
        `${event.externalId}: acknowledged as ${event.eventId} by ${event.sourceId}, stored ${items.length} times there`,
      );
      continue;
    }
    const item = items[0]!;
    if (String(item.event_id) !== event.eventId) {
      violate('acknowledged-stored-once', `${event.externalId}: acknowledged as ${event.eventId}, stored as ${item.event_id}`);
      continue;
    }
    if (item.state !== 'handed_off') {
      violate('handed-off-once', `${event.externalId} (${event.kind}): ${item.state} after the last collection`);
      continue;
    }
    const text = await stored.handoff(event.sourceId, item.event_id);
    const problem = text === undefined ? 'no hand-off object' : handoffProblem(text, event.eventId, event.expected);
    if (problem) violate('handed-off-once', `${event.externalId} (event ${event.eventId}): handed off with ${problem}`);
  }
  for (const duplicate of record.duplicates) {
    if (duplicate.answered !== duplicate.first)
      violate(
        'acknowledged-stored-once',
        `${duplicate.key}: a duplicate answered ${duplicate.answered}, the first send ${duplicate.first}`,
      );
  }
  checkAnnouncements(input, violate);
}

/**
 * Each acknowledged event announced, naming it as stored; every announcement inside a sweep of its source; one conversation
 * announced by one sweep only; and repeats within a sweep no more than the faults its batches met (the one repeat the
 * product allows: an announcement sent just before a failure is sent again by the resumed sweep).
 */
function checkAnnouncements({ record, stored, faults }: InvariantInput, violate: Violate): void {
  const byKey = new Map<string, { announcement: StoredAnnouncement; sweep: number }[]>();
  for (const announcement of stored.announcements) {
    const { detail } = announcement;
    const sweep = record.sweeps.findIndex(
      (window) => window.sourceIds.includes(detail.source_id) && announcement.byte >= window.fromByte && announcement.byte < window.toByte,
    );
    if (sweep === -1) violate('handed-off-once', `${detail.key}: announced outside any sweep of its source`);
    const storedItem = (stored.events.get(detail.external_id) ?? []).find((item) => item.source_id === detail.source_id);
    if (!storedItem || storedItem.event_id !== detail.event_id || handoffKey(detail) !== detail.key)
      violate('handed-off-once', `${detail.key}: announces ${JSON.stringify(detail)}, which names no stored event`);
    byKey.set(detail.key, [...(byKey.get(detail.key) ?? []), { announcement, sweep }]);
  }
  for (const event of record.events.values()) {
    const key = handoffKey({ source_id: event.sourceId, event_id: Number(event.eventId) });
    const announced = byKey.get(key) ?? [];
    if (announced.length === 0) violate('handed-off-once', `${event.externalId} (event ${event.eventId}): never announced`);
    for (const { announcement } of announced) {
      const { detail } = announcement;
      const type = event.kind === 'calls' ? 'call' : 'text';
      if (detail.link_id !== event.linkId || detail.external_id !== event.externalId || detail.type !== type)
        violate('handed-off-once', `${key}: announced as ${JSON.stringify(detail)}`);
    }
  }
  const repeatsBySweep = new Map<number, number>();
  for (const [key, announced] of byKey) {
    const sweeps = new Set(announced.map(({ sweep }) => sweep).filter((sweep) => sweep !== -1));
    if (sweeps.size > 1) violate('handed-off-once', `${key}: handed off by ${sweeps.size} sweeps`);
    for (const sweep of sweeps) {
      const repeats = announced.filter((one) => one.sweep === sweep).length - 1;
      repeatsBySweep.set(sweep, (repeatsBySweep.get(sweep) ?? 0) + repeats);
    }
  }
  for (const [sweep, repeats] of repeatsBySweep) {
    const window = record.sweeps[sweep]!;
    const allowed = repeatingFaults(faults, COLLECT_FUNCTION, window.startedAt, window.endedAt);
    if (repeats > allowed)
      violate(
        'handed-off-once',
        `a ${window.how} sweep of ${window.sourceIds.join(', ')} announced ${repeats} conversations again, after ${allowed} faults`,
      );
  }
}
