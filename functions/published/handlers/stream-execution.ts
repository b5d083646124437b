import { executionStream } from '#executions/execution-streams.ts';
import { streamTailFromEnv } from '#executions/wiring.ts';
import { eventStreamSettingsFromEnv, openStreamsFromEnv } from '#published/wiring.ts';
import { followStreamRoute } from '#published/stream-route.ts';

/** GET /api/v1/published/executions/{execution_id}/stream: the execution's whole event stream, replayed and then live. */
export const handler = followStreamRoute(
  'PublishedStreamExecution',
  streamTailFromEnv(),
  openStreamsFromEnv(),
  eventStreamSettingsFromEnv(),
  executionStream,
);
