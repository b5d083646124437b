import { routeById } from '#functions/routes.ts';
import { routeCors } from '#published/route-cors.ts';
import { servedDocumentResponse } from '#shared/http/openapi-server.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';
import { publishedApiDocument } from '#published/openapi.ts';

const route = routeById('PublishedOpenApi');
const cors = routeCors(route);
// The stack's CORS headers say `Vary: Origin`; this answer's own Vary replaces theirs, so it names Origin too.
const vary = cors ? ['Origin'] : [];
const document = publishedApiDocument();

/** GET /api/v1/published/openapi.json: no key; a browser tool on an allowed origin (Swagger UI, say) may read it. */
export const handler = withHttpStack(route, async (request) => servedDocumentResponse(document, request, vary), { cors });
