import { routeById } from '#functions/routes.ts';
import { routeCors } from '#published/route-cors.ts';
import { referenceScriptResponse } from '#shared/http/api-reference/api-reference.ts';
import { redocScript } from '#shared/http/api-reference/redoc-script.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';

const route = routeById('PublishedDocsScript');
const cors = routeCors(route);
// The stack's CORS headers say `Vary: Origin`; this answer's own Vary replaces theirs, so it names Origin too.
const vary = cors ? ['Origin'] : [];

/** GET /api/v1/published/docs/redoc.standalone.js: the script the reference page loads; no key. */
export const handler = withHttpStack(route, async (request) => referenceScriptResponse(request, redocScript, vary), { cors });
