import { executeRequestSchema } from '#executions/execute-request.ts';
import { SETTLED_STATUSES, executionView, type ExecutionRecord } from '#executions/execution-model.ts';
import { ownedExecution, waitUntilSettled } from '#executions/execution-service.ts';
import { startOrJoin, type StartOnceDeps } from '#executions/idempotency-service.ts';
import { executionStartFromEnv } from '#executions/wiring.ts';
import { executeHeartbeatFromEnv } from '#published/wiring.ts';
import { routePath } from '#functions/routes.ts';
import { externalUrl } from '#shared/http/external-url.ts';
import { idempotencyKey, invocationDeadline, executionHeaders } from '#published/execution-start.ts';
import { keepJsonResponseAlive, type JsonHeartbeat } from '#shared/http/http-stack.ts';
import { MAX_BLOCKING_EXECUTE_MS, MAX_EXECUTE_BODY_BYTES } from '#shared/limits.ts';
import { logger, metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { jsonBody, pathParameter, publishedRoute } from '#published/published-route.ts';

/** Time kept back from the function's own deadline to end the document. */
const ANSWER_MARGIN_MS = 2000;
export interface ExecuteOptions {
  /** The whitespace that keeps the answer alive while the execution goes on: how often, how much (wiring.ts). */
  heartbeat: JsonHeartbeat;
}

/**
 * POST /api/v1/published/workflows/{workflow_id}/execute: starts the execution and answers when it settles.
 * Refusals (401, 403, 404, 400, 413, 422, 429, 503) are ordinary JSON answers with their status. Once the execution has
 * started, the answer is 200 at once, naming the execution in its headers, kept alive with JSON whitespace while the execution goes
 * on; an execution still going at the deadline ends the document with its current status (`running`) and the `poll_url` to
 * follow it. With an `Idempotency-Key` already used for the same request, the answer is that key's run, waited for
 * exactly as the first request waited.
 */
export function createExecuteHandler(deps: StartOnceDeps, options: ExecuteOptions) {
  return publishedRoute('PublishedExecute', async (request, caller, context) => {
    const body = jsonBody(request, executeRequestSchema, MAX_EXECUTE_BODY_BYTES);
    const workflowId = pathParameter(request, 'workflow_id');
    const key = idempotencyKey(request);
    const execution = await startOrJoin(deps, caller, workflowId, body, {
      key,
      invocationDeadlineMs: invocationDeadline(deps.now(), context),
    });
    metrics.addMetric(execution.started ? 'WorkflowRunsStarted' : 'WorkflowRunsJoined', MetricUnit.Count, 1);
    // A joined run is read before the status goes out, so a read that fails is still an ordinary JSON refusal.
    const first = execution.started ?? (await ownedExecution(deps, caller, execution.executionId, true));
    // A joined run began before this request: its settling time says nothing about how long the workflow's runs take.
    const waitDeps = execution.started ? deps : { ...deps, settleTimes: undefined };
    const deadline = deps.now() + Math.min(MAX_BLOCKING_EXECUTE_MS, context.getRemainingTimeInMillis() - ANSWER_MARGIN_MS);
    const pollUrl = externalUrl(request, routePath('PublishedGetExecution', { execution_id: execution.executionId }));

    return keepJsonResponseAlive(
      context,
      200,
      options.heartbeat,
      async (callerGone) => {
        let record: ExecutionRecord = first;
        try {
          if (!SETTLED_STATUSES.includes(record.status)) record = await waitUntilSettled(waitDeps, first, deadline, callerGone);
        } catch (error) {
          // The status line is out: the execution goes on, so the answer is what is known of it and where to poll.
          logger.error('execution status could not be read while waiting', error as Error);
        }
        const view = executionView(record, deps.now());
        return SETTLED_STATUSES.includes(record.status) ? view : { ...view, poll_url: pollUrl };
      },
      executionHeaders(request, 'PublishedGetExecution', execution.executionId),
    );
  });
}

export const handler = createExecuteHandler(executionStartFromEnv(), { heartbeat: executeHeartbeatFromEnv() });
