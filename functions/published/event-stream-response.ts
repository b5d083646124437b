import type { Context } from 'aws-lambda';
import type { StreamedEvent, StreamEnd } from '#executions/run-event-streams.ts';
import { serveStream, type HttpResponse } from '#shared/http/http-stack.ts';
import { STREAM_FLUSH_BURST, STREAM_FLUSH_PADDING_BYTES, STREAM_FLUSH_REFILL_MS } from '#shared/limits.ts';
import { logger, metrics, MetricUnit } from '#shared/lambda/powertools.ts';

/*
 * The published API's server-sent events, whole: the wire format, the response headers, the heartbeat, the filler
 * that gets small writes past Lambda, and the resume notice. What the events say comes from the run event log.
 */

/**
 * The text/event-stream wire format (WHATWG HTML, server-sent events). `data` is one line of JSON:
 * JSON.stringify escapes CR and LF, the only line breaks of the format.
 */
export function sseEvent(event: { id?: number; event: string; data: unknown }): string {
  const id = event.id === undefined ? '' : `id: ${event.id}\n`;
  return `${id}event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** A comment line: clients ignore it, proxies and API Gateway see bytes flowing. */
export const SSE_HEARTBEAT = ': keep-alive\n\n';

/** Some SSE clients read line by line into a fixed buffer (Go's bufio.Scanner stops at 64 KiB): filler lines stay short. */
const PADDING_LINE_BYTES = 1024;

/** At least `bytes` of comment lines (`:` and spaces): nothing for EventSource, neither an event nor a field. */
export function ssePadding(bytes: number): string {
  const line = (length: number) => `:${' '.repeat(length - 2)}\n`;
  const remainder = bytes % PADDING_LINE_BYTES;
  return line(PADDING_LINE_BYTES).repeat(Math.floor(bytes / PADDING_LINE_BYTES)) + (remainder === 0 ? '' : line(Math.max(2, remainder)));
}

/** Written after the last event of a burst so that Lambda sends the burst on instead of holding it (see limits.ts). */
export const SSE_FLUSH_PADDING = ssePadding(STREAM_FLUSH_PADDING_BYTES);

/** Server-sent events: no caching, and no buffering by nginx-style proxies (`X-Accel-Buffering`). */
export const EVENT_STREAM_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * The answer to a client that already has a stream's last event: 204 No Content, with no body and no event-stream
 * type. WHATWG HTML's EventSource fails the connection on any answer but a 200 event stream and never reconnects
 * after it; 204 is the status the standard names for telling a client to stop.
 */
export const NOTHING_MORE: HttpResponse = Object.freeze({ statusCode: 204, headers: {}, body: '' });

export interface EventStreamTiming {
  /** A comment goes out after this long without a byte. */
  heartbeatMs: number;
  /** The stream ends itself after this long, with a `resume` notice. */
  maxStreamMs: number;
}

/**
 * When the filler after a burst of events may go: at once while the budget lasts; the budget grows by one every
 * `refillMs`, up to `burst`.
 */
export class FillerPacing {
  private available: number;
  private since: number;

  constructor(
    private readonly burst: number,
    private readonly refillMs: number,
    now: number,
  ) {
    this.available = burst;
    this.since = now;
  }

  private refill(now: number): void {
    const gained = Math.floor((now - this.since) / this.refillMs);
    if (gained <= 0) return;
    this.available = Math.min(this.burst, this.available + gained);
    this.since += gained * this.refillMs;
  }

  waitMs(now: number): number {
    this.refill(now);
    return this.available > 0 ? 0 : this.since + this.refillMs - now;
  }

  spend(now: number): void {
    this.refill(now);
    this.available -= 1;
  }
}

/** Time kept back from the function's own deadline to write the `resume` notice and end the response. */
const END_MARGIN_MS = 5000;

/**
 * Serves a run's events as server-sent events. The first byte (a comment) goes out at once, so the status and
 * headers reach the client even when the first event is far off. A comment follows after every `heartbeatMs`
 * of silence. Lambda may hold small writes back until more bytes follow, so each comment and each burst of events
 * is followed by filler comments (`SSE_FLUSH_PADDING`), paced for events (limits.ts). When the stream must end
 * early (its time is up, or the log could not be read), its last event is `resume`, with no id:
 * `{last_event_id, resume_url, reason}`, where `resume_url` continues exactly after the last event sent. A caller
 * that goes away stops the reading at once; the run goes on regardless. `headers` go out with the status, beside the
 * event stream's own.
 */
export function respondWithEvents(
  context: Context,
  timing: EventStreamTiming,
  start: { after: number; now: () => number; resumeUrl: (lastEventId: number) => string },
  produce: (options: { signal: AbortSignal; deadlineMs: number }) => AsyncGenerator<StreamedEvent, StreamEnd>,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return serveStream(context, { ...headers, ...EVENT_STREAM_HEADERS }, async (sink) => {
    const deadlineMs = start.now() + Math.min(timing.maxStreamMs, context.getRemainingTimeInMillis() - END_MARGIN_MS);
    let lastEventId = start.after;
    let heartbeat: NodeJS.Timeout | undefined;
    let filler: NodeJS.Timeout | undefined;
    const pacing = new FillerPacing(STREAM_FLUSH_BURST, STREAM_FLUSH_REFILL_MS, start.now());
    const pad = () => {
      clearTimeout(filler);
      filler = undefined;
      sink.write(SSE_FLUSH_PADDING);
    };
    const armHeartbeat = () => {
      clearTimeout(heartbeat);
      heartbeat = setTimeout(beat, timing.heartbeatMs);
    };
    // Nothing else is on its way after a heartbeat: its filler goes with it, unpaced (heartbeats pace themselves).
    function beat() {
      sink.write(SSE_HEARTBEAT);
      pad();
      armHeartbeat();
    }
    const send = (text: string) => {
      sink.write(text);
      // Once per burst (the events of one read go out together), and as a write of its own: Lambda sends on what
      // came before it, whether it waits for enough bytes or for the next chunk to begin.
      filler ??= setTimeout(() => {
        pacing.spend(start.now());
        pad();
      }, pacing.waitMs(start.now()));
      armHeartbeat();
    };
    const resume = (reason: 'time_limit' | 'unavailable') =>
      send(sseEvent({ event: 'resume', data: { last_event_id: lastEventId, resume_url: start.resumeUrl(lastEventId), reason } }));

    beat();
    metrics.addMetric('EventStreamsOpened', MetricUnit.Count, 1);
    const events = produce({ signal: sink.callerGone, deadlineMs });
    try {
      for (;;) {
        const next = await events.next();
        if (next.done) {
          if (next.value === 'deadline') resume('time_limit');
          if (next.value === 'gone') metrics.addMetric('EventStreamsAbandoned', MetricUnit.Count, 1);
          break;
        }
        if (next.value.id !== undefined) lastEventId = next.value.id;
        send(sseEvent(next.value));
      }
    } catch (error) {
      // The status line is out: the client learns where to pick up, and the log has everything it missed.
      logger.error('event stream ended early', error as Error);
      resume('unavailable');
    } finally {
      clearTimeout(heartbeat);
      // The end of the response sends everything still held: no filler needed.
      clearTimeout(filler);
    }
  });
}
