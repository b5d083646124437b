import { request, type IncomingHttpHeaders } from 'node:http';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { reportViolation } from './answer-violations.ts';
import { answerCheck, type BodyCheck } from './openapi.ts';

export interface SseEvent {
  id: number | undefined;
  event: string;
  data: any;
}

/**
 * A server-sent events client over plain HTTP, parsing with `eventsource-parser` (the parser of the
 * `eventsource` polyfill): what a browser's EventSource would see, one connection, no automatic reconnect.
 *
 * Every answer is held to the OpenAPI documents (test/support/openapi.ts): a status, content type or header the
 * operation does not describe rejects `openSse`; an answer that is not an event stream (a JSON refusal, a 204) is read
 * to its end and checked before `openSse` resolves; each event is checked as it arrives, and one the document does not
 * describe rejects `waitFor` and `ended` and fails the test.
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
  /** Resolves when the server ends the response (or the connection drops); rejects when an event broke the document. */
  ended: Promise<void>;
  /** The first event the OpenAPI document does not describe, if any. */
  violation: Error | undefined;
  /** Resolves with the first event that matches, or rejects after `timeoutMs`. */
  waitFor(match: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Drops the connection, as a client that goes away. */
  close(): void;
}

export function openSse(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown; undocumented?: string } = {},
): Promise<SseStream> {
  const method = options.method ?? 'GET';
  return new Promise((resolve, reject) => {
    const sentAt = Date.now();
    const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    const req = request(url, { method, headers: { 'content-type': 'application/json', ...options.headers } }, (res) => {
      let check: BodyCheck;
      try {
        check = answerCheck({ method, url }, { status: res.statusCode ?? 0, headers: res.headers }, options.undocumented);
      } catch (error) {
        req.destroy();
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      const isEventStream = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
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
        violation: undefined,
        ended: new Promise<void>((done, broken) => {
          const end = () => {
            endedFlag = true;
            notify();
            if (stream.violation) broken(stream.violation);
            else done();
          };
          res.once('end', end);
          res.once('close', end);
          res.once('error', end);
        }),
        waitFor(match, timeoutMs = 15_000) {
          return new Promise((found, fail) => {
            const check = () => {
              const event = stream.events.find(match);
              if (stream.violation) {
                cleanup();
                fail(stream.violation);
              } else if (event) {
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
      // Rejected only with a violation, which also fails the test on its own: a stream nobody awaits to its end is fine.
      stream.ended.catch(() => undefined);
      const violated = (error: unknown) => {
        if (stream.violation) return;
        stream.violation = error instanceof Error ? error : new Error(String(error));
        reportViolation(stream.violation);
        notify();
      };
      const parser = createParser({
        onEvent(message: EventSourceMessage) {
          try {
            check.event({ ...(message.id === undefined ? {} : { id: message.id }), event: message.event ?? 'message', data: message.data });
          } catch (error) {
            violated(error);
          }
          stream.events.push({
            id: message.id === undefined ? undefined : Number(message.id),
            event: message.event ?? 'message',
            data: parsedData(message.data),
          });
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
        if (isEventStream) parser.feed(chunk);
      });
      if (isEventStream) {
        resolve(stream);
        return;
      }
      // A refusal or a 204: short, and whole before the test looks at it.
      let settled = false;
      const whole = () => {
        if (settled) return;
        settled = true;
        try {
          check.body(stream.text);
          resolve(stream);
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      };
      res.once('end', whole);
      res.once('close', whole);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** An event's `data` as JSON; text that is not JSON (which the OpenAPI check reports) stays text. */
function parsedData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

/** The concatenated `token` contents of one node, as a client rebuilding the text would. */
export function tokensOf(events: SseEvent[], nodeId: string): string {
  return events
    .filter((event) => event.event === 'token' && event.data.node_id === nodeId)
    .map((event) => event.data.content as string)
    .join('');
}
