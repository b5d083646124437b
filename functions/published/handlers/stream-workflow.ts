import { executeRequestSchema } from '#executions/execute-request.ts';
import { startExecution, type StartDeps } from '#executions/execution-service.ts';
import { runStream, type TailDeps } from '#executions/run-event-streams.ts';
import { executionStartFromEnv, runTailFromEnv } from '#executions/wiring.ts';
import { MAX_EXECUTE_BODY_BYTES } from '#shared/limits.ts';
import { metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { respondWithEvents, type EventStreamTiming } from '#published/event-stream-response.ts';
import { jsonBody, pathParameter, publishedRoute } from '#published/published-handler.ts';
import { resumeUrl } from '#published/run-stream-handler.ts';
import { eventStreamTimingFromEnv } from '#published/wiring.ts';

/**
 * POST /api/v1/published/workflows/{workflow_id}/stream: starts the run exactly as execute does (same body,
 * same refusals as JSON), then streams its log until `complete`. The run does not depend on the stream: a
 * dropped connection resumes at GET /executions/{id}/stream with Last-Event-ID.
 */
export function createStreamWorkflowHandler(deps: { start: StartDeps; tail: TailDeps }, timing: EventStreamTiming) {
  return publishedRoute('PublishedStreamWorkflow', async (request, caller, context) => {
    const body = jsonBody(request, executeRequestSchema, MAX_EXECUTE_BODY_BYTES);
    const started = await startExecution(deps.start, caller, pathParameter(request, 'workflow_id'), body);
    metrics.addMetric('WorkflowRunsStarted', MetricUnit.Count, 1);
    const executionId = started.execution_id;
    return respondWithEvents(
      context,
      timing,
      { after: 0, now: deps.tail.now, resumeUrl: (lastEventId) => resumeUrl(request, 'PublishedStreamExecution', executionId, lastEventId) },
      (options) => runStream(deps.tail, executionId, { ...options, after: 0 }),
    );
  });
}

export const handler = createStreamWorkflowHandler({ start: executionStartFromEnv(), tail: runTailFromEnv() }, eventStreamTimingFromEnv());
