import { routeById } from '#functions/routes.ts';
import { routeCors } from '#published/route-cors.ts';
import { servedDocument } from '#shared/http/openapi-server.ts';
import { withHttpStack, jsonResponse } from '#shared/http/http-stack.ts';
import { publishedApiDocument } from '#published/openapi.ts';

const route = routeById('PublishedOpenApi');
const document = publishedApiDocument();

/** GET /api/v1/published/openapi.json: no key; a browser tool on an allowed origin (Swagger UI, say) may read it. */
export const handler = withHttpStack(route, async (request) => jsonResponse(200, servedDocument(document, request)), {
  cors: routeCors(route),
});
