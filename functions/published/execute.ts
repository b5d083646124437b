import { executeRequestSchema } from '../engine/execute-request.ts';
import { executionView } from '../engine/execution-model.ts';
import { startExecution, waitUntilSettled } from '../engine/execution-service.ts';
import { executionStartFromEnv } from '../engine/wiring.ts';
import { jsonResponse } from '../shared/http-handler.ts';
import { MAX_BLOCKING_EXECUTE_MS, MAX_EXECUTE_BODY_BYTES } from '../shared/limits.ts';
import { metrics, MetricUnit } from '../shared/powertools.ts';
import { jsonBody, pathParameter, publishedRoute } from './published-handler.ts';

const deps = executionStartFromEnv();
/** Time kept back from the function's own deadline to answer. */
const ANSWER_MARGIN_MS = 2000;

/**
 * POST /api/v1/published/workflows/{workflow_id}/execute: starts the run and answers when it settles.
 * A run still going at the deadline is answered 202 with its current status and a Location to poll.
 */
export const handler = publishedRoute('PublishedExecute', async (request, caller, context) => {
  const body = jsonBody(request, executeRequestSchema, MAX_EXECUTE_BODY_BYTES);
  const started = await startExecution(deps, caller, pathParameter(request, 'workflow_id'), body);
  const deadline = Math.min(deps.now() + MAX_BLOCKING_EXECUTE_MS, deps.now() + context.getRemainingTimeInMillis() - ANSWER_MARGIN_MS);
  const record = await waitUntilSettled(deps, started.execution_id, deadline);
  const view = executionView(record, deps.now());
  metrics.addMetric('WorkflowRunsStarted', MetricUnit.Count, 1);
  if (record.status === 'queued' || record.status === 'running') {
    const response = jsonResponse(202, view);
    response.headers = { ...response.headers, location: `${request.path.replace(/\/workflows\/[^/]+\/execute$/, '')}/executions/${record.execution_id}` };
    return response;
  }
  return jsonResponse(200, view);
});
