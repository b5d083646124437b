import { routeById } from '#functions/routes.ts';
import { servedDocument } from '#shared/http/openapi-server.ts';
import { withHttpStack, jsonResponse } from '#shared/http/http-stack.ts';
import { webhookApiDocument } from '#inbound/openapi.ts';

const document = webhookApiDocument();

/** GET /api/v1/webhooks/openapi.json: no token. */
export const handler = withHttpStack(routeById('WebhookOpenApi'), async (request) => jsonResponse(200, servedDocument(document, request)));
