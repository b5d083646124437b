import { setTimeout as sleep } from 'node:timers/promises';
import { serveStream } from '#shared/http/http-stack.ts';
import { publishedRoute } from '#published/published-route.ts';
import { runStreamProbe, streamProbeOf } from '#published/stream-probe.ts';
import { EVENT_STREAM_HEADERS } from '#published/event-stream-response.ts';
import { openStream, streamLeaseUntil } from '#published/open-streams.ts';
import { openStreamsFromEnv } from '#published/wiring.ts';

const openStreams = openStreamsFromEnv();

/**
 * GET /api/v1/published/diagnostics/stream-probe?bytes=N&hold_ms=M: N bytes as one write, M ms of nothing, then an
 * `end` event; straight to the response stream, without the heartbeat and filler of the product's streams.
 */
export const handler = publishedRoute('PublishedStreamProbe', async (request, caller, context) => {
  const probe = streamProbeOf(request.queryStringParameters ?? null);
  // A probe is a stream like the others: it holds one of its key's open streams until its invocation ends.
  const stream = await openStream(openStreams, caller, streamLeaseUntil(openStreams.now(), context.getRemainingTimeInMillis()));
  try {
    return await serveStream(context, EVENT_STREAM_HEADERS, (sink) =>
      runStreamProbe(probe, {
        write: (text) => sink.write(text),
        // Where the platform says the caller went away, the hold ends and the end event goes to nobody (Lambda does not say).
        hold: (ms) => sleep(ms, undefined, { signal: sink.callerGone }).catch(() => undefined),
      }),
    );
  } finally {
    await stream.close();
  }
});
