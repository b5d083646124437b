import { executionView } from '#executions/execution-model.ts';
import { ownedExecution } from '#executions/execution-service.ts';
import { executionReadsFromEnv } from '#executions/wiring.ts';
import { jsonResponse } from '#shared/http/http-stack.ts';
import { pathParameter, publishedRoute } from '#published/published-route.ts';

const deps = executionReadsFromEnv();

/** GET /api/v1/published/executions/{execution_id} */
export const handler = publishedRoute('PublishedGetExecution', async (request, caller) => {
  const record = await ownedExecution(deps, caller, pathParameter(request, 'execution_id'));
  return jsonResponse(200, executionView(record, deps.now()));
});
