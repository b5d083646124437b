import { runStream } from '#executions/run-event-streams.ts';
import { runTailFromEnv } from '#executions/wiring.ts';
import { eventStreamSettingsFromEnv } from '#published/wiring.ts';
import { followRunRoute } from '#published/run-stream-route.ts';

/** GET /api/v1/published/executions/{execution_id}/stream: the run's whole event stream, replayed and then live. */
export const handler = followRunRoute('PublishedStreamExecution', runTailFromEnv(), eventStreamSettingsFromEnv(), runStream);
