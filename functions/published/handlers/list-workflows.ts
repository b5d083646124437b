import { jsonResponse } from '#shared/http-handler.ts';
import { activePublication } from '#workflows/publication-service.ts';
import { publicationsFromEnv } from '#workflows/wiring.ts';
import { publishedRoute } from '#published/published-handler.ts';

const deps = { publications: publicationsFromEnv(), now: Date.now };

/** GET /api/v1/published/workflows */
export const handler = publishedRoute('PublishedListWorkflows', async (_request, caller) => {
  const active = await activePublication(deps, caller.projectId);
  const workflows = await deps.publications.listWorkflows(active.publication_id);
  return jsonResponse(200, {
    workflows: workflows
      .map(({ definition }) => ({ id: definition.id, name: definition.name, description: definition.description }))
      .sort((a, b) => a.id.localeCompare(b.id)),
    publication_id: active.publication_id,
    project_id: caller.projectId,
  });
});
