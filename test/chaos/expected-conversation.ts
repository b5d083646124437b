import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { ExpectedConversation, LinkSetup } from './traffic-record.ts';

/**
 * What a hand-off must hold for an event, from what was sent: the sender's fields as sent, the link and source it
 * came through, the messages in order (as a digest: a large dialog's are hundreds of KB) and the recording's bytes as
 * the host served them. `handoffProblem` compares a stored hand-off with it.
 */
interface SentMessage {
  text: string;
  timestamp: string;
  author_name: string;
  author_role: string;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** The messages in their order with what the sender wrote of each (the chaos mix sends no sequence numbers). */
export function messagesDigest(messages: readonly SentMessage[]): string {
  return sha256(JSON.stringify(messages.map((message) => [message.text, message.timestamp, message.author_name, message.author_role])));
}

/** The bytes the recording host serves for a path: its own for each path, so a recording swapped for another shows. */
export function recordingBytes(path: string): Buffer {
  const seed = createHash('sha256').update(path).digest();
  return Buffer.concat(Array.from({ length: 128 }, () => seed));
}

export function expectedOf(link: LinkSetup, event: Record<string, unknown>, recordingsUrl: string): ExpectedConversation {
  const common = {
    type: event.type as 'call' | 'text',
    external_id: String(event.external_id),
    link_id: link.linkId,
    source_id: link.sourceId,
    source_channel: (event.source_channel as string | undefined) ?? null,
    status: (event.status as string | undefined) ?? null,
    occurred_at: String(event.occurred_at),
    metadata: event.metadata ?? null,
  };
  if (event.type === 'text') return { ...common, messages: messagesDigest(event.messages as SentMessage[]) };
  const audio = event.audio as { url: string; format: string };
  const bytes = recordingBytes(audio.url.slice(recordingsUrl.length));
  return { ...common, recording: { sha256: sha256(bytes), bytes: bytes.length, format: audio.format } };
}

/** What differs between a stored hand-off (its JSON text) and what was sent; undefined when it is what was sent. */
export function handoffProblem(text: string, eventId: string, expected: ExpectedConversation): string | undefined {
  let stored: Record<string, unknown>;
  try {
    stored = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return 'not JSON';
  }
  if (String(stored.event_id) !== eventId) return `event_id ${String(stored.event_id)}, answered ${eventId}`;
  const { messages, recording, ...fields } = expected;
  for (const [name, value] of Object.entries(fields)) {
    if (!isDeepStrictEqual(stored[name], value)) return `${name} ${JSON.stringify(stored[name])}, sent ${JSON.stringify(value)}`;
  }
  if (messages !== undefined) {
    const got = Array.isArray(stored.messages) ? messagesDigest(stored.messages as SentMessage[]) : undefined;
    if (got !== messages) return `messages differ from those sent (${Array.isArray(stored.messages) ? stored.messages.length : 0} stored)`;
  }
  if (recording !== undefined) {
    const got = stored.recording as { sha256?: string; bytes?: number; format?: string } | null;
    if (got?.sha256 !== recording.sha256 || got.bytes !== recording.bytes || got.format !== recording.format)
      return `recording ${JSON.stringify(got)}, served ${JSON.stringify(recording)}`;
  }
  return undefined;
}
