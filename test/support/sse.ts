import { request, type IncomingHttpHeaders } from 'node:http';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseEvent {
  id: number | undefined;
  event: string;
  data: any;
}

/**
 * A server-sent events client over plain HTTP, parsing with `eventsource-parser` (the parser of the
 * `eventsource` polyfill): what a browser's EventSource would see, one connection, no automatic reconnect.
 */
export interface SseStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Events so far, parsed; `data` is JSON-decoded. */
  events: SseEvent[];
  comments: string[];
  /** When each event and comment arrived (ms since the request was sent), in arrival order. */
  arrivals: { kind: 'event' | 'comment'; atMs: number }[];
  /** The whole body when the response is not an event stream (an error answer). */
  text: string;
  /** Resolves when the server ends the response (or the connection drops). */
  ended: Promise<void>;
  /** Resolves with the first event that matches, or rejects after `timeoutMs`. */
  waitFor(match: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Drops the connection, as a client that goes away. */
  close(): void;
}

export function openSse(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const sentAt = Date.now();
    const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    const req = request(url, { method: options.method ?? 'GET', headers: { 'content-type': 'application/json', ...options.headers } }, (res) => {
      const waiters = new Set<() => void>();
      const notify = () => waiters.forEach((wake) => wake());
      let endedFlag = false;
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events: [],
        comments: [],
        arrivals: [],
        text: '',
        ended: new Promise<void>((done) => {
          const end = () => {
            endedFlag = true;
            notify();
            done();
          };
          res.once('end', end);
          res.once('close', end);
          res.once('error', end);
        }),
        waitFor(match, timeoutMs = 15_000) {
          return new Promise((found, fail) => {
            const check = () => {
              const event = stream.events.find(match);
              if (event) {
                cleanup();
                found(event);
              } else if (endedFlag) {
                cleanup();
                fail(new Error(`stream ended without the event; got ${JSON.stringify(stream.events.map((e) => e.event))}`));
              }
            };
            const timer = setTimeout(() => {
              cleanup();
              fail(new Error(`no such event within ${timeoutMs} ms; got ${JSON.stringify(stream.events.map((e) => e.event))}`));
            }, timeoutMs);
            const cleanup = () => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          });
        },
        close() {
          req.destroy();
        },
      };
      const parser = createParser({
        onEvent(message: EventSourceMessage) {
          stream.events.push({ id: message.id === undefined ? undefined : Number(message.id), event: message.event ?? 'message', data: JSON.parse(message.data) });
          stream.arrivals.push({ kind: 'event', atMs: Date.now() - sentAt });
          notify();
        },
        onComment(comment) {
          stream.comments.push(comment);
          stream.arrivals.push({ kind: 'comment', atMs: Date.now() - sentAt });
        },
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        stream.text += chunk;
        parser.feed(chunk);
      });
      resolve(stream);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The concatenated `token` contents of one node, as a client rebuilding the text would. */
export function tokensOf(events: SseEvent[], nodeId: string): string {
  return events.filter((event) => event.event === 'token' && event.data.node_id === nodeId).map((event) => event.data.content as string).join('');
}
