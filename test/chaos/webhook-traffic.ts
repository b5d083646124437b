import { randomBytes, randomUUID } from 'node:crypto';
import type { RetryingClient } from './client.ts';
import { expectedOf } from './expected-conversation.ts';
import { eventKey, noteKind, type LinkSetup, type TrafficRecord, type TrafficSetup } from './traffic-record.ts';

type Random = () => number;
type Action = () => Promise<void>;

/** The large dialogs kept to be sent again (each about 600 KB). */
const LARGE_KEPT = 4;

/**
 * The webhook API's side of the mix: calls and dialogs (small, and large ones whose bodies go to S3) to several links,
 * the same external_id to two links of a type (two sources, two events), duplicates sent after their first send and
 * racing it, large dialogs sent again. Each acknowledged event is kept with what its hand-off must hold.
 */
export function webhookActions(baseUrl: string, setup: TrafficSetup, client: RetryingClient, record: TrafficRecord) {
  const large: { link: LinkSetup; body: string }[] = [];
  const linksOf = (kind: LinkSetup['kind']) => setup.links.filter((link) => link.kind === kind);
  const pickLink = (kind: LinkSetup['kind'], random: Random) => {
    const links = linksOf(kind);
    return links[Math.floor(random() * links.length)]!;
  };

  async function sendEvent(link: LinkSetup, body: string, keep: boolean): Promise<void> {
    const event = JSON.parse(body) as Record<string, unknown>;
    const externalId = String(event.external_id);
    record.sent.set(externalId, (record.sent.get(externalId) ?? new Set()).add(link.sourceId));
    const answer = await client.send(`${link.kind} event`, `${baseUrl}/api/v1/webhooks/${link.token}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    if (!answer || (answer.status !== 201 && answer.status !== 200)) return;
    const eventId = String((JSON.parse(answer.text) as { event_id: unknown }).event_id);
    const key = eventKey(link.sourceId, externalId);
    const first = record.events.get(key);
    if (first) record.duplicates.push({ key, answered: eventId, first: first.eventId });
    else
      record.events.set(key, {
        kind: link.kind,
        linkId: link.linkId,
        sourceId: link.sourceId,
        externalId,
        eventId,
        expected: expectedOf(link, event, setup.recordings.url),
        body: keep ? body : undefined,
      });
  }

  const callBody = () =>
    JSON.stringify({
      type: 'call',
      external_id: `call-${randomUUID()}`,
      occurred_at: new Date().toISOString(),
      source_channel: 'website',
      status: 'completed',
      metadata: { direction: 'inbound' },
      audio: { url: `${setup.recordings.url}/rec/${randomUUID()}.mp3`, format: 'mp3', duration_seconds: 12 },
    });

  const dialogBody = (messages: number, textLength: number) =>
    JSON.stringify({
      type: 'text',
      external_id: `chat-${randomUUID()}`,
      occurred_at: new Date().toISOString(),
      source_channel: 'telegram',
      messages: Array.from({ length: messages }, (_, i) => ({
        // A large dialog's text is random, so that its gzip passes the inline limit and its body goes to S3.
        text: messages < 10 ? `message ${i} `.padEnd(textLength, 'x') : randomBytes(textLength / 2).toString('hex'),
        timestamp: new Date(Date.now() - 60_000 + i).toISOString(),
        author_name: i % 2 ? 'Operator Ann' : 'Client Bob',
        author_role: i % 2 ? 'operator' : 'client',
      })),
    });

  const bodyOf = (kind: LinkSetup['kind']) => (kind === 'calls' ? callBody() : dialogBody(3, 20));

  return {
    call:
      (random: Random): Action =>
      async () => {
        noteKind(record, 'call event');
        await sendEvent(pickLink('calls', random), callBody(), true);
      },
    dialog:
      (random: Random): Action =>
      async () => {
        noteKind(record, 'small dialog');
        await sendEvent(pickLink('dialogs', random), dialogBody(3, 20), true);
      },
    largeDialog:
      (random: Random): Action =>
      async () => {
        noteKind(record, 'large dialog');
        const link = pickLink('dialogs', random);
        const body = dialogBody(1_500, 300);
        await sendEvent(link, body, false);
        large.push({ link, body });
        if (large.length > LARGE_KEPT) large.shift();
      },
    /** An acknowledged small event sent again to its link, or (one time in four) a large dialog. */
    duplicate:
      (random: Random): Action =>
      async () => {
        if (random() < 0.25 && large.length > 0) {
          noteKind(record, 'duplicate of a large dialog');
          const { link, body } = large[Math.floor(random() * large.length)]!;
          await sendEvent(link, body, false);
          return;
        }
        const small = [...record.events.values()].filter((event) => event.body !== undefined);
        if (small.length === 0) return;
        noteKind(record, 'duplicate');
        const event = small[Math.floor(random() * small.length)]!;
        await sendEvent(setup.links.find((link) => link.linkId === event.linkId)!, event.body!, false);
      },
    /** A new event sent twice at once: the two sends race, and both must name one event. */
    racingDuplicate:
      (random: Random): Action =>
      async () => {
        noteKind(record, 'duplicate racing its first send');
        const kind = random() < 0.5 ? 'calls' : 'dialogs';
        const link = pickLink(kind, random);
        const body = bodyOf(kind);
        await Promise.all([sendEvent(link, body, true), sendEvent(link, body, true)]);
      },
    /** The same event to two links of a type: two sources, so two events, each handed off under its own. */
    crossLink:
      (random: Random): Action =>
      async () => {
        const kind = random() < 0.5 ? 'calls' : 'dialogs';
        const [first, second] = linksOf(kind);
        if (!second) return;
        noteKind(record, 'one external_id to two links');
        const body = bodyOf(kind);
        await sendEvent(first!, body, true);
        await sendEvent(second, body, true);
      },
  };
}
