import { routeById } from '#functions/routes.ts';
import { routeCors } from '#published/route-cors.ts';
import { documentationAnswer } from '#shared/http/api-reference/documentation.ts';
import { OPENAPI_31_VERSION } from '#shared/http/openapi.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';
import { publishedApiDocument } from '#published/openapi.ts';

const route = routeById('PublishedDocs');
const cors = routeCors(route);
const answer = documentationAnswer({
  title: 'Published Workflow API',
  paths: {
    document: routeById('PublishedOpenApi').path,
    document31: routeById('PublishedOpenApi31').path,
    page: route.path,
    script: routeById('PublishedDocsScript').path,
  },
  document: publishedApiDocument(),
  document31: publishedApiDocument(OPENAPI_31_VERSION),
  // The stack's CORS headers say `Vary: Origin`; an answer's own Vary replaces theirs, so it names Origin too.
  vary: cors ? ['Origin'] : [],
});

/**
 * GET /api/v1/published/openapi.json, openapi-3.1.json, docs (`docs/` leads there) and docs/redoc.standalone.js: no
 * key; a browser tool on an allowed origin (Swagger UI, say) may read them.
 */
export const handler = withHttpStack(route, async (request) => answer(request), { cors });
