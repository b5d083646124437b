import { parseUtf8Json } from '#shared/http/well-formed.ts';
import { ConflictError, ValidationError, type FieldIssue } from '#shared/errors.ts';
import { addCostUnits, recordCost, type CostUnits } from '#shared/metering/cost-meter.ts';
import { expectedPutCost } from '#shared/store/item-size.ts';
import { INDEXED_TABLES } from '#shared/store/table-indexes.ts';
import type { BodyStore } from '#shared/store/body-store.ts';
import { parseInboundEvent, type InboundEvent } from './event-schema.ts';
import type { EventsRepository } from './events-repository.ts';
import { isFilterValue, newStoredEvent, packBody, writeBody, type PackedBody, type StoredEvent } from './stored-event.ts';
import { EVENT_TYPE_OF_CONNECTOR, type LinkView } from './link-model.ts';
import type { OpenedLink } from './link-access.ts';
import type { LinksRepository } from './links-repository.ts';
import { recordingUrlProblem } from '#shared/network/public-url.ts';
import { logger } from '#shared/lambda/powertools.ts';

export interface IngestDeps {
  links: LinksRepository;
  events: EventsRepository;
  bodies: BodyStore;
  nextEventId: () => Promise<number>;
  now: () => number;
  /** Test-only (`ALLOW_LOOPBACK_RECORDINGS=1`, never set by CDK): https recording links on a loopback host. */
  allowLoopbackRecordings: boolean;
}

export type IngestOutcome =
  | { status: 'accepted'; external_id: string; event_id: number; messages: number }
  | { status: 'duplicate'; external_id: string; event_id: number };

/** The acceptance rules: the schema (with the window of `occurred_at`), then the rules that depend on the link. */
function validateForLink(body: unknown, link: LinkView, allowLoopbackRecordings = false): InboundEvent {
  const parsed = parseInboundEvent(body);
  const issues: FieldIssue[] = parsed.ok ? [] : [...parsed.issues];
  const expectedType = EVENT_TYPE_OF_CONNECTOR[link.connector_type];
  const sentType = (body as { type?: unknown } | null)?.type;
  if ((sentType === 'call' || sentType === 'text') && sentType !== expectedType) {
    issues.push({ field: 'type', message: `this link accepts only events of type ${expectedType}` });
  }
  if (parsed.ok && parsed.event.type === 'call') {
    const problem = recordingUrlProblem(parsed.event.audio.url, { allowedHosts: link.allow_hosts, allowLoopback: allowLoopbackRecordings });
    if (problem) issues.push({ field: 'audio.url', message: problem });
  }
  if (issues.length > 0 || !parsed.ok) throw new ValidationError(issues);
  return parsed.event;
}

/** U+FFFD in UTF-8: what a decoder puts where bytes are not UTF-8. */
const REPLACEMENT_CHARACTER = Buffer.from('\ufffd', 'utf8');

/** A decoded body holding U+FFFD: maybe longer than what was sent (3 bytes for each invalid byte), and refused anyway. */
export function mayBeAltered(raw: Buffer, decoded: boolean): boolean {
  return decoded && raw.includes(REPLACEMENT_CHARACTER);
}

/**
 * The body's JSON, which must be UTF-8. `decoded`: the body reached us as text the gateway decoded (an HTTP API does
 * so for JSON), where a U+FFFD may stand for bytes that were not UTF-8; it is refused like them. The character itself
 * can be sent escaped (`\ufffd`).
 */
function parseJsonBody(raw: Buffer, decoded = false): unknown {
  try {
    if (mayBeAltered(raw, decoded)) throw new Error('U+FFFD in a decoded body');
    return parseUtf8Json(raw);
  } catch {
    throw new ValidationError([{ field: 'body', message: 'must be valid UTF-8 JSON' }]);
  }
}

/**
 * Queues one event exactly once per (source, external_id); `decoded` as parseJsonBody says. The body is checked and
 * its item built first (no I/O but for a block of event ids now and then), then the request is admitted: one update
 * takes the minute's request and the day's event together and carries the request's usage, beside the guessing check.
 * The conditional put is the atomic dedup step; a duplicate gives its day unit back, so duplicates never use the
 * quota, and a 201 is only sent once the body is durably stored.
 */
export async function ingestEvent(deps: IngestDeps, opened: OpenedLink, rawBody: Buffer, decoded = false): Promise<IngestOutcome> {
  const nowMs = deps.now();
  const prepared = await prepareEvent(deps, opened.link, rawBody, nowMs, decoded);
  if ('refusal' in prepared) {
    await opened.admit('request');
    throw prepared.refusal;
  }
  const ticket = await opened.admit('event', prepared.expectedCost);
  const { stored } = prepared;
  if (ticket.admission === 'overQuota') {
    const existing = await deps.events.findLive(stored.source_id, stored.external_id, nowMs);
    if (existing) return duplicate(existing);
    throw ticket.day.refuse();
  }

  let outcome: Awaited<ReturnType<typeof storeEvent>>;
  try {
    outcome = await storeEvent(deps, opened, prepared, nowMs);
  } catch (error) {
    await ticket.giveBack();
    throw error;
  }
  if (!outcome.stored) {
    // The refused write answered the event that is there; a store that does not (or an item gone since) is read.
    // The day's unit goes back in an update that also takes back what the admission billed for an accepted event.
    const [existing] = await Promise.all([
      outcome.existing ?? deps.events.findLive(stored.source_id, stored.external_id, nowMs),
      // The sender's answer is decided (a duplicate): a unit that cannot be given back now leaves the day's count one
      // high (never lets more in), rather than turn the answer into a 500.
      ticket.giveBack().catch((error: unknown) => {
        logger.warn('could not give back the day unit of a duplicate', { linkId: opened.link.link_id, error: error as Error });
      }),
    ]);
    if (!existing) throw new Error('Deduplication record vanished between write and read');
    return duplicate(existing);
  }
  return {
    status: 'accepted',
    external_id: stored.external_id,
    event_id: stored.event_id,
    messages: stored.message_count,
  };
}

/** The event a bound link may take, or the refusal the sender gets once the request is counted (409, then 400). */
function checkEvent(
  deps: IngestDeps,
  link: LinkView,
  rawBody: Buffer,
  decoded: boolean,
): { event: InboundEvent; sourceId: string } | { refusal: Error } {
  if (link.state !== 'bound' || !link.source_id) return { refusal: new ConflictError('The link is issued but no source is connected yet') };
  try {
    return { event: validateForLink(parseJsonBody(rawBody, decoded), link, deps.allowLoopbackRecordings), sourceId: link.source_id };
  } catch (error) {
    return { refusal: error as Error };
  }
}

function duplicate(existing: Pick<StoredEvent, 'external_id' | 'event_id'>): IngestOutcome {
  return { status: 'duplicate', external_id: existing.external_id, event_id: Number(existing.event_id) };
}

interface PreparedEvent {
  stored: StoredEvent;
  body: PackedBody;
  /** What storing it will be billed, known before it is sent: the usage the admission carries. */
  expectedCost: Partial<CostUnits>;
}

/**
 * The event's item and its packed body (inline, or an object to write to S3), or the refusal. The parsed event stays
 * here: only its item outlives the call, so a dialog's 2000 parsed messages are garbage before the first store request
 * is sent.
 */
async function prepareEvent(
  deps: IngestDeps,
  link: LinkView,
  rawBody: Buffer,
  nowMs: number,
  decoded: boolean,
): Promise<PreparedEvent | { refusal: Error }> {
  const checked = checkEvent(deps, link, rawBody, decoded);
  if ('refusal' in checked) return checked;
  const { event, sourceId } = checked;
  const eventId = await deps.nextEventId();
  const body = packBody(rawBody, sourceId, eventId);
  const stored = newStoredEvent(event, { sourceId, eventId }, body, nowMs);
  const bodyCost = body.object ? { s3WriteRequests: 1, s3StoredBytes: body.object.gzip.byteLength } : {};
  const expectedCost = addCostUnits(addCostUnits(expectedPutCost(stored, INDEXED_TABLES.inboundEvents), bodyCost), { webhookEvents: 1 });
  return { stored, body, expectedCost };
}

/** Stores the event, or answers the live one that already holds (source, external_id) when the write was refused. */
async function storeEvent(
  deps: IngestDeps,
  opened: OpenedLink,
  { stored, body }: PreparedEvent,
  nowMs: number,
): Promise<{ stored: true } | { stored: false; existing?: StoredEvent }> {
  // Body first: once the item exists it must point at something durable.
  await writeBody(deps.bodies, body);
  // Filter values the event brings are written beside it.
  const [written] = await Promise.all([deps.events.putIfNew(stored, nowMs), rememberFilterValues(deps, opened, stored)]);
  // Billed in advance by the admission; a duplicate's give-back takes it back.
  if (written.stored) recordCost({ webhookEvents: 1 });
  if (!written.stored && body.object) {
    const bodyKey = body.object.key;
    // The sender's answer is decided (a duplicate): a copy that cannot be deleted now is left to the bucket's
    // lifecycle rule for inbound/ rather than turned into a 500 that makes the sender retry a stored event.
    await deps.bodies.delete(bodyKey).catch((error: unknown) => {
      logger.warn('could not delete the body of a duplicate', { sourceId: stored.source_id, bodyKey, error: error as Error });
    });
  }
  return written;
}

/**
 * Only writes when the event brings a filter value the link has not seen, which is rare after the first day. A
 * duplicate's value is remembered too: it is a value the source sends, whichever event brought it.
 */
async function rememberFilterValues(deps: IngestDeps, { link, tokenHash }: OpenedLink, event: StoredEvent): Promise<void> {
  const channel = event.source_channel;
  const channels = channel && isFilterValue(channel) && !link.channel_values?.has(channel) ? [channel] : [];
  const directions = event.direction && !link.direction_values?.has(event.direction) ? [event.direction] : [];
  if (channels.length + directions.length === 0) return;
  // Written beside the event: a missed filter value must not turn its 201 into a retry.
  try {
    await deps.links.addFilterValues(link.link_id, tokenHash, { channels, directions });
  } catch (error) {
    return void logger.warn('could not remember filter values', { linkId: link.link_id, error: error as Error });
  }
  // The link this function keeps in memory learns them too, or its next requests would write them again.
  for (const value of channels) (link.channel_values ??= new Set()).add(value);
  for (const value of directions) (link.direction_values ??= new Set()).add(value);
}
