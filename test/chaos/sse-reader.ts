import { createParser } from 'eventsource-parser';

export interface StreamedEvent {
  id: number | undefined;
  event: string;
  data: unknown;
}

export interface StreamRead {
  status: number;
  headers: Headers;
  /** Every event of an event stream, in order; empty for a refusal. */
  events: StreamedEvent[];
  /** The body of an answer that is not an event stream. */
  text: string;
  /** The connection ended without the server ending the response (a cut, a crash mid-stream). */
  cut: boolean;
  /** The client stopped reading on its own (`leaveAfter`). */
  left: boolean;
}

export interface ReadOptions {
  /** The client itself drops the connection after that many events, as a reader whose network fails. */
  dropAfter?: number;
  /** Whether to stop reading after this event (the client leaves: a subscription it no longer needs). */
  leaveAfter?: (event: StreamedEvent) => boolean;
  /** Each event as it arrives (a stop sent in the middle of a stream). */
  onEvent?: (event: StreamedEvent) => void;
  signal?: AbortSignal;
}

/** Reads a whole response as server-sent events (what EventSource parses), noting whether it was cut short. */
export async function readEventStream(url: string, init: RequestInit, options: ReadOptions = {}): Promise<StreamRead> {
  const { dropAfter = Infinity, leaveAfter, onEvent, signal } = options;
  // One controller for both ends of a read (AbortSignal.any's signals may be collected early on Node 20).
  const dropping = new AbortController();
  signal?.addEventListener('abort', () => dropping.abort(), { once: true });
  const response = await fetch(url, { ...init, signal: dropping.signal });
  const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (!isStream || !response.body)
    return { status: response.status, headers: response.headers, events: [], text: await response.text(), cut: false, left: false };
  const events: StreamedEvent[] = [];
  let cut = false;
  let left = false;
  const parser = createParser({
    onEvent(message) {
      const event: StreamedEvent = {
        id: message.id === undefined ? undefined : Number(message.id),
        event: message.event ?? 'message',
        data: JSON.parse(message.data) as unknown,
      };
      events.push(event);
      onEvent?.(event);
      if (leaveAfter?.(event)) left = true;
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      // Leaving the loop cancels the body; an abort alone, once the body has fully arrived, can leave Node 20's fetch
      // waiting forever on a read that never comes.
      if (events.length >= dropAfter) {
        cut = true;
        break;
      }
      if (left) break;
    }
  } catch (error) {
    // The caller's own deadline is its to report; a drop (ours or the server's) is a cut stream to resume.
    if (signal?.aborted) throw error;
    cut = true;
  }
  return { status: response.status, headers: response.headers, events, text: '', cut, left };
}
