import { PayloadTooLargeError } from '#shared/errors.ts';
import { withHttpStack, jsonResponse, rawBody } from '#shared/http/http-stack.ts';
import { MAX_REQUEST_BODY_BYTES } from '#shared/limits.ts';
import { logger, metrics, MetricUnit } from '#shared/lambda/powertools.ts';
import { ingestEvent, mayBeAltered } from '#inbound/ingest-service.ts';
import { openLink } from '#inbound/link-access.ts';
import { webhookCaller } from '#inbound/request.ts';
import { ingestFromEnv, linkAccessFromEnv } from '#inbound/wiring.ts';
import { routeById } from '#functions/routes.ts';

const access = linkAccessFromEnv();
const ingest = ingestFromEnv(access);

/** POST /api/v1/webhooks/{token}/events */
export const handler = withHttpStack(routeById('WebhookPostEvent'), async (request) => {
  const body = rawBody(request);
  const decoded = !request.isBase64Encoded;
  // The limit counts the bytes sent; a decoded body grown by the U+FFFD put for invalid bytes is refused (400) below.
  if (body.byteLength > MAX_REQUEST_BODY_BYTES && !mayBeAltered(body, decoded))
    throw new PayloadTooLargeError('Request body exceeds 1 MiB');
  const { token, clientIp } = webhookCaller(request);
  const opened = await openLink(access, token, clientIp);
  logger.appendKeys({ link_id: opened.link.link_id });
  const outcome = await ingestEvent(ingest, opened, body, decoded);
  metrics.addMetric(outcome.status === 'accepted' ? 'EventsAccepted' : 'EventsDuplicate', MetricUnit.Count, 1);
  return jsonResponse(outcome.status === 'accepted' ? 201 : 200, outcome);
});
