import { jsonResponse } from '#shared/http/http-stack.ts';
import { activeWorkflows } from '#workflows/publication-service.ts';
import { publicationReadsFromEnv } from '#workflows/wiring.ts';
import { publishedRoute } from '#published/published-route.ts';
import type { WorkflowList } from '#published/workflow-views.ts';

const deps = publicationReadsFromEnv();

/** GET /api/v1/published/workflows */
export const handler = publishedRoute('PublishedListWorkflows', async (_request, caller) => {
  const { publication_id, workflows } = await activeWorkflows(deps, caller.projectId);
  return jsonResponse(200, {
    workflows: workflows.map(({ id, name, description }) => ({ id, name, description })),
    publication_id,
    project_id: caller.projectId,
  } satisfies WorkflowList);
});
