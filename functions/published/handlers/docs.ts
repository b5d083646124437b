import { routeById } from '#functions/routes.ts';
import { routeCors } from '#published/route-cors.ts';
import { referencePageAnswer, referencePageResponse } from '#shared/http/api-reference/api-reference.ts';
import { redocScript } from '#shared/http/api-reference/redoc-script.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';

const route = routeById('PublishedDocs');
const page = referencePageResponse(
  {
    title: 'Published Workflow API',
    pagePath: route.path,
    documentPath: routeById('PublishedOpenApi31').path,
    scriptPath: routeById('PublishedDocsScript').path,
  },
  redocScript,
);

/** GET /api/v1/published/docs: the API reference, rendered in the browser from openapi-3.1.json; no key (`docs/` leads there). */
export const handler = withHttpStack(route, async (request) => referencePageAnswer(request, route.path, page), {
  cors: routeCors(route),
});
