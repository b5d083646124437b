import { decisionRequestSchema } from '#executions/execute-request.ts';
import { decideApproval } from '#executions/execution-control.ts';
import { executionServiceFromEnv } from '#executions/wiring.ts';
import { jsonResponse } from '#shared/http/http-stack.ts';
import { MAX_EXECUTE_BODY_BYTES } from '#shared/limits.ts';
import { jsonBody, pathParameter, publishedRoute } from './published-route.ts';

/** approve and reject differ only in the decision they send through the task token. */
export function decisionRoute(routeId: string, decision: 'approved' | 'rejected') {
  const deps = executionServiceFromEnv();
  return publishedRoute(routeId, async (request, caller) => {
    const { feedback } = jsonBody(request, decisionRequestSchema, MAX_EXECUTE_BODY_BYTES);
    return jsonResponse(200, await decideApproval(deps, caller, pathParameter(request, 'execution_id'), decision, feedback));
  });
}
