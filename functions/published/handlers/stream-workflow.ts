import { executeRequestSchema } from '#executions/execute-request.ts';
import { startOrJoin, type StartOnceDeps } from '#executions/idempotency-service.ts';
import { checkResumePoint, executionStream, type TailDeps } from '#executions/execution-streams.ts';
import { executionStartFromEnv, streamTailFromEnv } from '#executions/wiring.ts';
import { MAX_EXECUTE_BODY_BYTES } from '#shared/limits.ts';
import { metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { NOTHING_MORE, respondWithEvents, type EventStreamSettings } from '#published/event-stream-response.ts';
import { jsonBody, pathParameter, publishedRoute } from '#published/published-route.ts';
import { resumePoint, resumeUrl } from '#published/stream-route.ts';
import { idempotencyKey, invocationDeadline, executionHeaders } from '#published/execution-start.ts';
import { eventStreamSettingsFromEnv, openStreamsFromEnv } from '#published/wiring.ts';
import { openStream, streamLeaseUntil, type OpenStreamsDeps } from '#published/open-streams.ts';

/**
 * POST /api/v1/published/workflows/{workflow_id}/stream: starts the execution exactly as execute does (same body,
 * same refusals as JSON), then streams its log until `complete`, naming the execution in the response headers. The execution does
 * not depend on the stream: a dropped connection resumes at GET /executions/{id}/stream with Last-Event-ID, or by
 * sending this request again with its `Idempotency-Key`, which joins the key's run instead of starting another: from
 * its first event, or after `Last-Event-ID` when sent (what fetch-event-source sends when it retries); 204 when that
 * was the final event of an execution that has ended.
 */
export function createStreamWorkflowHandler(
  deps: { start: StartOnceDeps; tail: TailDeps; openStreams: OpenStreamsDeps },
  settings: EventStreamSettings,
) {
  return publishedRoute('PublishedStreamWorkflow', async (request, caller, context) => {
    const body = jsonBody(request, executeRequestSchema, MAX_EXECUTE_BODY_BYTES);
    const workflowId = pathParameter(request, 'workflow_id');
    const key = idempotencyKey(request);
    // A resume id means something only for an execution the key already names; it is checked before the key is used, and a
    // request without a key ignores it as before (a new execution's events are all new to the caller).
    const resume = key === undefined ? undefined : resumePoint(request);
    // Before the start: a key or deployment with all its streams open is refused (429) without starting an execution.
    const stream = await openStream(
      deps.openStreams,
      caller,
      streamLeaseUntil(deps.openStreams.now(), context.getRemainingTimeInMillis(), settings.maxStreamMs),
    );
    try {
      const execution = await startOrJoin(deps.start, caller, workflowId, body, {
        key,
        invocationDeadlineMs: invocationDeadline(deps.start.now(), context),
      });
      metrics.addMetric(execution.started ? 'WorkflowRunsStarted' : 'WorkflowRunsJoined', MetricUnit.Count, 1);
      const executionId = execution.executionId;
      const after = !execution.started && resume ? resume.after : 0;
      const headers = executionHeaders(request, 'PublishedStreamExecution', executionId);
      // Past the log's end is a 400. A caller that already has the final event of an ended run gets the GET streams'
      // 204, naming the execution: one answer for "nothing more will come" on every stream route.
      if (after > 0 && (await checkResumePoint(deps.tail, executionId, after, resume!.field)) === 'ended')
        return { ...NOTHING_MORE, headers };
      return await respondWithEvents(
        context,
        settings,
        { after, now: deps.tail.now, resumeUrl: (lastEventId) => resumeUrl(request, 'PublishedStreamExecution', executionId, lastEventId) },
        (options) => executionStream(deps.tail, executionId, { ...options, after }),
        headers,
      );
    } finally {
      await stream.close();
    }
  });
}

export const handler = createStreamWorkflowHandler(
  { start: executionStartFromEnv(), tail: streamTailFromEnv(), openStreams: openStreamsFromEnv() },
  eventStreamSettingsFromEnv(),
);
