import { routeById } from '#functions/routes.ts';
import { referencePageAnswer, referencePageResponse } from '#shared/http/api-reference/api-reference.ts';
import { redocScript } from '#shared/http/api-reference/redoc-script.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';

const route = routeById('WebhookDocs');
const page = referencePageResponse(
  {
    title: 'Inbound Conversation Webhook API',
    pagePath: route.path,
    documentPath: routeById('WebhookOpenApi31').path,
    scriptPath: routeById('WebhookDocsScript').path,
  },
  redocScript,
);

/** GET /api/v1/webhooks/docs: the API reference, rendered in the browser from openapi-3.1.json; no token (`docs/` leads there). */
export const handler = withHttpStack(route, async (request) => referencePageAnswer(request, route.path, page));
