import { logger } from '#shared/lambda/powertools.ts';
import { withHttpStack, jsonResponse } from '#shared/http/http-stack.ts';
import { openLink } from '#inbound/link-access.ts';
import { webhookCaller } from '#inbound/request.ts';
import { linkAccessFromEnv } from '#inbound/wiring.ts';
import { routeById } from '#functions/routes.ts';

const access = linkAccessFromEnv();

/** GET /api/v1/webhooks/{token}/ping */
export const handler = withHttpStack(routeById('WebhookPing'), async (request) => {
  const { token, clientIp } = webhookCaller(request);
  const opened = await openLink(access, token, clientIp);
  const { link } = opened;
  logger.appendKeys({ link_id: link.link_id });
  await opened.admit('request');
  return jsonResponse(200, { status: 'ok', state: link.state, connector_type: link.connector_type });
});
