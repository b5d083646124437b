import { routeById } from '#functions/routes.ts';
import { documentationAnswer } from '#shared/http/api-reference/documentation.ts';
import { OPENAPI_31_VERSION } from '#shared/http/openapi.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';
import { webhookApiDocument } from '#inbound/openapi.ts';

const answer = documentationAnswer({
  title: 'Inbound Conversation Webhook API',
  paths: {
    document: routeById('WebhookOpenApi').path,
    document31: routeById('WebhookOpenApi31').path,
    page: routeById('WebhookDocs').path,
    script: routeById('WebhookDocsScript').path,
  },
  document: webhookApiDocument(),
  document31: webhookApiDocument(OPENAPI_31_VERSION),
});

/**
 * GET /api/v1/webhooks/openapi.json, openapi-3.1.json, docs (`docs/` leads there) and docs/redoc.standalone.js, no
 * token; and, as the HTTP API's `$default` route, 404 for any other request.
 */
export const handler = withHttpStack(routeById('WebhookDocs'), async (request) => answer(request));
