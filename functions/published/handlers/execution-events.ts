import { lifecycleStream } from '#executions/run-event-streams.ts';
import { runTailFromEnv } from '#executions/wiring.ts';
import { eventStreamSettingsFromEnv } from '#published/wiring.ts';
import { followRunRoute } from '#published/run-stream-route.ts';

/** GET /api/v1/published/executions/{execution_id}/events: lifecycle events, subscribe-then-fetch. */
export const handler = followRunRoute('PublishedExecutionEvents', runTailFromEnv(), eventStreamSettingsFromEnv(), lifecycleStream);
