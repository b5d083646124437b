import { routeById } from '#functions/routes.ts';
import { withHttpStack, jsonResponse } from '#shared/http/http-stack.ts';
import { webhookApiDocument } from '#inbound/openapi.ts';

const document = webhookApiDocument();

/** GET /api/v1/webhooks/openapi.json: no token. */
export const handler = withHttpStack(routeById('WebhookOpenApi'), async () => jsonResponse(200, document));
