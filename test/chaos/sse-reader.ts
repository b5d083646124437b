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
}

/**
 * Reads a whole response as server-sent events (what EventSource parses), noting whether it was cut short.
 * `dropAfter`: the client itself drops the connection after that many events, as a reader whose network fails.
 */
export async function readEventStream(url: string, init: RequestInit, dropAfter = Infinity, signal?: AbortSignal): Promise<StreamRead> {
  // One controller for both ends of a read (AbortSignal.any's signals may be collected early on Node 20).
  const dropping = new AbortController();
  signal?.addEventListener('abort', () => dropping.abort(), { once: true });
  const response = await fetch(url, { ...init, signal: dropping.signal });
  const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (!isStream || !response.body)
    return { status: response.status, headers: response.headers, events: [], text: await response.text(), cut: false };
  const events: StreamedEvent[] = [];
  const parser = createParser({
    onEvent(message) {
      events.push({
        id: message.id === undefined ? undefined : Number(message.id),
        event: message.event ?? 'message',
        data: JSON.parse(message.data) as unknown,
      });
    },
  });
  const decoder = new TextDecoder();
  let cut = false;
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      // Leaving the loop cancels the body; an abort alone, once the body has fully arrived, can leave Node 20's fetch
      // waiting forever on a read that never comes.
      if (events.length >= dropAfter) {
        cut = true;
        break;
      }
    }
  } catch (error) {
    // The caller's own deadline is its to report; a drop (ours or the server's) is a cut stream to resume.
    if (signal?.aborted) throw error;
    cut = true;
  }
  return { status: response.status, headers: response.headers, events, text: '', cut };
}
