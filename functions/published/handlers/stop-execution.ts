import { stopExecution } from '#executions/execution-control.ts';
import { executionServiceFromEnv } from '#executions/wiring.ts';
import { jsonResponse } from '#shared/http/http-stack.ts';
import { pathParameter, publishedRoute } from '#published/published-route.ts';

const deps = executionServiceFromEnv();

/** POST /api/v1/published/executions/{execution_id}/stop */
export const handler = publishedRoute('PublishedStopExecution', async (request, caller) =>
  jsonResponse(200, await stopExecution(deps, caller, pathParameter(request, 'execution_id'))),
);
