import type { Context } from 'aws-lambda';
import type { StreamedEvent, StreamEnd } from '#executions/run-event-streams.ts';
import { serveEventStream, type HttpResponse } from '#shared/http-handler.ts';
import { logger, metrics, MetricUnit } from '#shared/powertools.ts';
import { SSE_HEARTBEAT, sseEvent } from '#shared/sse.ts';

export interface EventStreamTiming {
  /** A comment goes out after this long without a byte. */
  heartbeatMs: number;
  /** The stream ends itself after this long, with a `resume` notice. */
  maxStreamMs: number;
}

/** Time kept back from the function's own deadline to write the `resume` notice and end the response. */
const END_MARGIN_MS = 5000;

/**
 * Serves a run's events as server-sent events. The first byte (a comment) goes out at once, so the status and
 * headers reach the client even when the first event is far off. A comment follows after every `heartbeatMs`
 * of silence. When the stream must end early (its time is up, or the log could not be read), its last event
 * is `resume`, with no id: `{last_event_id, resume_url, reason}`, where `resume_url` continues exactly after
 * the last event sent. A caller that goes away stops the reading at once; the run goes on regardless.
 */
export function respondWithEvents(
  context: Context,
  timing: EventStreamTiming,
  start: { after: number; now: () => number; resumeUrl: (lastEventId: number) => string },
  produce: (options: { signal: AbortSignal; deadlineMs: number }) => AsyncGenerator<StreamedEvent, StreamEnd>,
): Promise<HttpResponse> {
  return serveEventStream(context, async (sink) => {
    const deadlineMs = start.now() + Math.min(timing.maxStreamMs, context.getRemainingTimeInMillis() - END_MARGIN_MS);
    let lastEventId = start.after;
    let heartbeat: NodeJS.Timeout | undefined;
    const send = (text: string) => {
      sink.write(text);
      clearTimeout(heartbeat);
      heartbeat = setTimeout(() => send(SSE_HEARTBEAT), timing.heartbeatMs);
    };
    const resume = (reason: 'time_limit' | 'unavailable') =>
      send(sseEvent({ event: 'resume', data: { last_event_id: lastEventId, resume_url: start.resumeUrl(lastEventId), reason } }));

    send(SSE_HEARTBEAT);
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
    }
  });
}
