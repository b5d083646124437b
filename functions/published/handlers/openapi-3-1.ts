import { routeById } from '#functions/routes.ts';
import { routeCors } from '#published/route-cors.ts';
import { OPENAPI_31_VERSION } from '#shared/http/openapi.ts';
import { servedDocumentResponse } from '#shared/http/openapi-server.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';
import { publishedApiDocument } from '#published/openapi.ts';

const route = routeById('PublishedOpenApi31');
const cors = routeCors(route);
// The stack's CORS headers say `Vary: Origin`; this answer's own Vary replaces theirs, so it names Origin too.
const vary = cors ? ['Origin'] : [];
const document = publishedApiDocument(OPENAPI_31_VERSION);

/** GET /api/v1/published/openapi-3.1.json: the document as OpenAPI 3.1; no key, readable from an allowed origin. */
export const handler = withHttpStack(route, async (request) => servedDocumentResponse(document, request, vary), { cors });
