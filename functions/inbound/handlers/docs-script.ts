import { routeById } from '#functions/routes.ts';
import { referenceScriptResponse } from '#shared/http/api-reference/api-reference.ts';
import { redocScript } from '#shared/http/api-reference/redoc-script.ts';
import { withHttpStack } from '#shared/http/http-stack.ts';

/** GET /api/v1/webhooks/docs/redoc.standalone.js: the script the reference page loads; no token. */
export const handler = withHttpStack(routeById('WebhookDocsScript'), async (request) => referenceScriptResponse(request, redocScript));
