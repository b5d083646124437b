import type { CallEvent, InboundEvent, TextEvent } from '#inbound/event-schema.ts';

/**
 * The normalized conversation the nightly collection hands to the analysis platform: one per event, as JSON
 * (`conversation.schema.json`, beside this file, documents it). The sender's fields are kept as sent; what the platform
 * needs and the hand-off's published format defines (message order, defaults, times) is made explicit.
 */
export interface Recording {
  key: string;
  bytes: number;
  sha256: string;
  format: string;
}

interface NormalizedMessage {
  sequence_number: number;
  external_id: string;
  text: string;
  timestamp: string;
  author_name: string;
  author_role: string;
  author_id: string | null;
  /** Seconds since the latest earlier message (in order) of another author role; null when there is none. */
  response_time_seconds: number | null;
}

export interface NormalizedConversation {
  event_id: number;
  external_id: string;
  source_id: string;
  link_id: string;
  type: InboundEvent['type'];
  source_channel: string | null;
  status: string | null;
  metadata: Record<string, unknown> | null;
  occurred_at: string;
  /** Calls: the downloaded recording; dialogs: null. */
  recording: Recording | null;
  /** Dialogs: earliest and latest message timestamp (ISO, UTC); calls: null. */
  started_at: string | null;
  ended_at: string | null;
  /** Dialogs only, ordered by sequence_number (ties keep the sender's order). */
  messages?: NormalizedMessage[];
}

export interface EventIds {
  event_id: number;
  source_id: string;
  link_id: string;
}

export function normalizeCall(ids: EventIds, event: CallEvent, recording: Recording): NormalizedConversation {
  return { ...common(ids, event), recording, started_at: null, ended_at: null };
}

/**
 * Dialog rules (the Hand-off of functions/collection/README.md): order is `sequence_number`, defaulting to the array
 * position from 1; a message's `external_id` defaults to `<conversation external_id>:<sequence_number>`. Timestamps give the
 * start, end and response times and never change the order.
 */
export function normalizeDialog(ids: EventIds, event: TextEvent): NormalizedConversation {
  const ordered = event.messages
    .map((message, index) => ({ message, sequence: message.sequence_number ?? index + 1, index }))
    .sort((a, b) => a.sequence - b.sequence || a.index - b.index);
  const messages: NormalizedMessage[] = [];
  // The latest message, and the latest one before the current streak of messages of its role.
  let last: { role: string; atMs: number } | undefined;
  let beforeStreak: { role: string; atMs: number } | undefined;
  for (const { message, sequence } of ordered) {
    const atMs = Date.parse(message.timestamp);
    const answered = last && last.role !== message.author_role ? last : beforeStreak;
    messages.push({
      sequence_number: sequence,
      external_id: message.external_id ?? `${event.external_id}:${sequence}`,
      text: message.text,
      timestamp: message.timestamp,
      author_name: message.author_name,
      author_role: message.author_role,
      author_id: message.author_id ?? null,
      response_time_seconds: answered ? (atMs - answered.atMs) / 1000 : null,
    });
    if (last && last.role !== message.author_role) beforeStreak = last;
    last = { role: message.author_role, atMs };
  }
  const times = event.messages.map((message) => Date.parse(message.timestamp));
  return {
    ...common(ids, event),
    recording: null,
    started_at: new Date(Math.min(...times)).toISOString(),
    ended_at: new Date(Math.max(...times)).toISOString(),
    messages,
  };
}

function common(ids: EventIds, event: InboundEvent): Omit<NormalizedConversation, 'recording' | 'started_at' | 'ended_at'> {
  return {
    event_id: ids.event_id,
    external_id: event.external_id,
    source_id: ids.source_id,
    link_id: ids.link_id,
    type: event.type,
    source_channel: event.source_channel ?? null,
    status: event.status ?? null,
    metadata: event.metadata ?? null,
    occurred_at: event.occurred_at,
  };
}
