import { lifecycleStream } from '#executions/execution-streams.ts';
import { streamTailFromEnv } from '#executions/wiring.ts';
import { eventStreamSettingsFromEnv, openStreamsFromEnv } from '#published/wiring.ts';
import { followStreamRoute } from '#published/stream-route.ts';

/** GET /api/v1/published/executions/{execution_id}/events: lifecycle events, subscribe-then-fetch. */
export const handler = followStreamRoute(
  'PublishedExecutionEvents',
  streamTailFromEnv(),
  openStreamsFromEnv(),
  eventStreamSettingsFromEnv(),
  lifecycleStream,
);
