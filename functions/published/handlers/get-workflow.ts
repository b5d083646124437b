import { jsonResponse } from '#shared/http/http-stack.ts';
import { publishedWorkflow } from '#workflows/publication-service.ts';
import { publicationReadsFromEnv } from '#workflows/wiring.ts';
import { pathParameter, publishedRoute } from '#published/published-route.ts';
import type { WorkflowDetail } from '#published/workflow-views.ts';

const deps = publicationReadsFromEnv();

/** GET /api/v1/published/workflows/{workflow_id} */
export const handler = publishedRoute('PublishedGetWorkflow', async (request, caller) => {
  const workflow = await publishedWorkflow(deps, caller.projectId, pathParameter(request, 'workflow_id'));
  const { id, name, description } = workflow.definition;
  return jsonResponse(200, {
    id,
    name,
    description,
    created_at: workflow.created_at,
    updated_at: workflow.updated_at,
  } satisfies WorkflowDetail);
});
