import { routeById } from '#functions/routes.ts';
import { httpHandler, jsonResponse } from '#shared/http/http-handler.ts';
import { webhookApiDocument } from '#inbound/openapi.ts';

const document = webhookApiDocument();

/** GET /api/v1/webhooks/openapi.json: no token. */
export const handler = httpHandler(routeById('WebhookOpenApi'), async () => jsonResponse(200, document));
