import { setTimeout as sleep } from 'node:timers/promises';
import { serveStream } from '#shared/http/http-stack.ts';
import { publishedRoute } from '#published/published-route.ts';
import { runStreamProbe, streamProbeOf } from '#published/stream-probe.ts';
import { EVENT_STREAM_HEADERS } from '#published/event-stream-response.ts';

/**
 * GET /api/v1/published/diagnostics/stream-probe?bytes=N&hold_ms=M: N bytes as one write, M ms of nothing, then an
 * `end` event; straight to the response stream, without the heartbeat and filler of the product's streams.
 */
export const handler = publishedRoute('PublishedStreamProbe', async (request, _caller, context) => {
  const probe = streamProbeOf(request.queryStringParameters);
  return serveStream(context, EVENT_STREAM_HEADERS, (sink) =>
    runStreamProbe(probe, {
      write: (text) => sink.write(text),
      // A caller that goes away ends the hold: the end event is then written to nobody, and the invocation stops.
      hold: (ms) => sleep(ms, undefined, { signal: sink.callerGone }).catch(() => undefined),
    }),
  );
});
