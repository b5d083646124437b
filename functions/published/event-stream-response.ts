import type { Context } from 'aws-lambda';
import type { StreamedEvent, StreamEnd } from '#executions/execution-streams.ts';
import { serveStream, type HttpResponse, type StreamSink } from '#shared/http/http-stack.ts';
import {
  STREAM_END_MARGIN_MS,
  STREAM_FLUSH_BURST,
  STREAM_FLUSH_REFILL_BYTES,
  STREAM_FLUSH_REFILL_MS,
  STREAM_RESUME_RETRY_MS,
} from '#shared/limits.ts';
import { logger, metrics, MetricUnit } from '#shared/lambda/powertools.ts';

/*
 * The published API's server-sent events, whole: the wire format, the response headers, the heartbeat, the filler
 * that gets small writes past a Lambda that holds them (where a deployment sets padding), the pace of a slow reader,
 * and the resume notice. What the events say comes from the stream event log.
 */

/**
 * The text/event-stream wire format (WHATWG HTML, server-sent events). `data` is one line of JSON:
 * JSON.stringify escapes CR and LF, the only line breaks of the format. `retry` sets how long EventSource waits before
 * it reconnects (milliseconds).
 */
export function sseEvent(event: { id?: number; event: string; data: unknown; retry?: number }): string {
  const id = event.id === undefined ? '' : `id: ${event.id}\n`;
  const retry = event.retry === undefined ? '' : `retry: ${event.retry}\n`;
  return `${id}${retry}event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
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

/**
 * What follows a heartbeat or the last event of a burst, as a write of its own, with the deployment's padding
 * (STREAM_FLUSH_PADDING_BYTES): `bytes` of comment lines, or nothing at 0.
 *
 * Why padding, and not something cheaper: a write is held, as reported, until enough bytes follow it (15 KB to
 * 100 KB) or the next write begins. Filler after the first write only would help only where the holding is of the
 * status line alone; filler of one byte only where the next write releases the one before. Neither kind was measured
 * anywhere, and the hold by size (what `admin verify` measures, and the twin models with TWIN_STREAM_HOLD_BYTES) lets
 * nothing but N bytes after each write through. So padding stays the mechanism, set per deployment from what
 * `admin verify` measured there, and 0 where nothing is held.
 */
export function sseFiller(bytes: number): string {
  return bytes > 0 ? ssePadding(bytes) : '';
}

/**
 * How often the filler after events may go once the first bursts had theirs: once a STREAM_FLUSH_REFILL_MS for every
 * STREAM_FLUSH_REFILL_BYTES of padding (never more often than the refill), so filler averages at most that many bytes
 * a second and a 14-minute stream stays far below Lambda's 200 MB response limit whatever the padding.
 */
export function fillerRefillMs(paddingBytes: number): number {
  return Math.ceil(STREAM_FLUSH_REFILL_MS * Math.max(1, paddingBytes / STREAM_FLUSH_REFILL_BYTES));
}

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

export interface EventStreamSettings {
  /** A comment goes out after this long without a byte. */
  heartbeatMs: number;
  /** The stream window: the stream ends itself after this long, with a `resume` notice. */
  maxStreamMs: number;
  /** The stream ends itself, with a `resume` notice, once its reader has taken nothing for this long while events wait. */
  slowReaderMs: number;
  /** Filler after each heartbeat and burst of events (STREAM_FLUSH_PADDING_BYTES); 0: none. */
  paddingBytes: number;
}

/** Why a stream ended early: the `reason` of its `resume` notice. */
type ResumeReason = 'time_limit' | 'unavailable' | 'slow_reader';

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

/**
 * Serves an execution's events as server-sent events. The first byte (a comment) goes out at once, so the status and
 * headers reach the client even when the first event is far off. A comment follows after every `heartbeatMs`
 * of silence. With padding set, each comment and each burst of events is followed by filler comments (`sseFiller`),
 * paced for events (limits.ts). The client sets the pace: while it has not taken what was written, filler and
 * heartbeats are left out and nothing more is read from the log (so at most one read waits in memory), and a reader
 * that stays behind for `slowReaderMs` gets the `resume` notice. When the stream must end early (its time is up, the
 * log could not be read, the reader is too slow), its last event is `resume`, with no id:
 * `{last_event_id, resume_url, reason}`, where `resume_url` continues exactly after the last event sent. A caller
 * that goes away stops the reading at once where the platform says so (Lambda does not: there the stream runs to its
 * window's end, writing to nobody); the execution goes on regardless. `headers` go out with the status, beside the event
 * stream's own.
 */
export function respondWithEvents(
  context: Context,
  settings: EventStreamSettings,
  start: { after: number; now: () => number; resumeUrl: (lastEventId: number) => string },
  produce: (options: { signal: AbortSignal; deadlineMs: number }) => AsyncGenerator<StreamedEvent, StreamEnd>,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return serveStream(context, { ...headers, ...EVENT_STREAM_HEADERS }, async (sink) => {
    const deadlineMs = start.now() + Math.min(settings.maxStreamMs, context.getRemainingTimeInMillis() - STREAM_END_MARGIN_MS);
    const filler = sseFiller(settings.paddingBytes);
    let lastEventId = start.after;
    let heartbeat: NodeJS.Timeout | undefined;
    let fillerTimer: NodeJS.Timeout | undefined;
    const pacing = new FillerPacing(STREAM_FLUSH_BURST, fillerRefillMs(settings.paddingBytes), start.now());
    const pad = () => {
      clearTimeout(fillerTimer);
      fillerTimer = undefined;
      // Behind a slow reader bytes are waiting already: more filler would only pile up.
      if (filler) sink.writeIfKeepingUp(filler);
    };
    const armHeartbeat = () => {
      clearTimeout(heartbeat);
      heartbeat = setTimeout(beat, settings.heartbeatMs);
    };
    // Nothing else is on its way after a heartbeat: its filler goes with it, unpaced (heartbeats pace themselves).
    function beat() {
      if (sink.writeIfKeepingUp(SSE_HEARTBEAT)) pad();
      armHeartbeat();
    }
    const send = (text: string) => {
      sink.write(text);
      // Once per burst (the events of one read go out together), and as a write of its own: Lambda sends on what
      // came before it, whether it waits for enough bytes or for the next chunk to begin.
      if (filler) {
        fillerTimer ??= setTimeout(() => {
          pacing.spend(start.now());
          pad();
        }, pacing.waitMs(start.now()));
      }
      armHeartbeat();
    };
    // The `retry:` hint brings EventSource back soon, with Last-Event-ID: the end is planned (a window's, a slow reader's).
    const resume = (reason: ResumeReason) =>
      send(
        sseEvent({
          event: 'resume',
          data: { last_event_id: lastEventId, resume_url: start.resumeUrl(lastEventId), reason },
          retry: STREAM_RESUME_RETRY_MS,
        }),
      );

    beat();
    metrics.addMetric('EventStreamsOpened', MetricUnit.Count, 1);
    const events = produce({ signal: sink.callerGone, deadlineMs });
    try {
      for (;;) {
        // The next read waits until the client has taken what was written: a slow reader holds back the log, not memory.
        const pace = await readerPace(sink, Math.min(settings.slowReaderMs, deadlineMs - start.now()));
        if (pace !== 'keeping_up') {
          if (pace === 'gone') metrics.addMetric('EventStreamsAbandoned', MetricUnit.Count, 1);
          else if (start.now() >= deadlineMs) resume('time_limit');
          else {
            logger.warn('event stream ended: the reader took nothing while events waited', {
              lastEventId,
              slowReaderMs: settings.slowReaderMs,
            });
            metrics.addMetric('EventStreamsSlowReaders', MetricUnit.Count, 1);
            resume('slow_reader');
          }
          await events.return(pace === 'gone' ? 'gone' : 'deadline');
          break;
        }
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
      clearTimeout(fillerTimer);
    }
    // A reader that stopped reading keeps the function no longer than the stream could have lasted (and half the
    // margin kept for the end): then it is cut off, and resumes with Last-Event-ID like any dropped connection.
    sink.endWithin(Math.max(0, deadlineMs - start.now()) + STREAM_END_MARGIN_MS / 2);
  });
}

/**
 * Whether the client keeps up: at once when it has taken what was written, else once it does; `behind` when it has
 * not within `withinMs`, `gone` when it went away.
 */
async function readerPace(sink: StreamSink, withinMs: number): Promise<'keeping_up' | 'behind' | 'gone'> {
  if (sink.callerGone.aborted) return 'gone';
  if (!sink.behind) return 'keeping_up';
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    sink.caughtUp().then((caughtUp): 'keeping_up' | 'gone' => (caughtUp ? 'keeping_up' : 'gone')),
    new Promise<'behind'>((resolve) => (timer = setTimeout(() => resolve('behind'), Math.max(0, withinMs)))),
  ]);
  clearTimeout(timer);
  return outcome;
}
