import { routeById } from '#functions/routes.ts';
import { servedDocumentResponse } from '#shared/http/openapi-server.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';
import { webhookApiDocument } from '#inbound/openapi.ts';

const document = webhookApiDocument();

/** GET /api/v1/webhooks/openapi.json: no token. */
export const handler = withHttpStack(routeById('WebhookOpenApi'), async (request) => servedDocumentResponse(document, request));
