import { routeById, routes } from '#functions/routes.ts';
import { referenceScriptResponse } from '#shared/http/api-reference/api-reference.ts';
import { redocScript } from '#shared/http/api-reference/redoc-script.ts';
import { corsPolicyFromEnv } from '#shared/http/cors.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';

const route = routeById('PublishedDocsScript');
const cors = corsPolicyFromEnv(routes.filter((candidate) => candidate.path === route.path).map((candidate) => candidate.method));
// The stack's CORS headers say `Vary: Origin`; this answer's own Vary replaces theirs, so it names Origin too.
const vary = cors ? ['Origin'] : [];

/** GET /api/v1/published/docs/redoc.standalone.js: the script the reference page loads; no key. */
export const handler = withHttpStack(route, async (request) => referenceScriptResponse(request, redocScript, vary), { cors });
