import { routeById } from '#functions/routes.ts';
import { OPENAPI_31_VERSION } from '#shared/http/openapi.ts';
import { servedDocumentResponse } from '#shared/http/openapi-server.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';
import { webhookApiDocument } from '#inbound/openapi.ts';

const document = webhookApiDocument(OPENAPI_31_VERSION);

/** GET /api/v1/webhooks/openapi-3.1.json: the document as OpenAPI 3.1; no token. */
export const handler = withHttpStack(routeById('WebhookOpenApi31'), async (request) => servedDocumentResponse(document, request));
