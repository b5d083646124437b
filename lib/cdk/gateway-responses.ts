import { CORS_EXPOSE_HEADERS } from '#shared/http/cors.ts';

/**
 * What API Gateway answers by itself, with no function involved: an unknown path or method, a Lambda integration
 * that failed or timed out, the stage throttle. One REST API serves both APIs and a gateway response cannot tell
 * them apart, so its body carries the message under both names the APIs' clients read: `error` (the webhook API's
 * `{error: string}`) and `detail` (the Workflow API's `{detail: string}`), the error shapes their OpenAPI documents
 * describe (and "The contract in brief" of functions/inbound/README.md and functions/published/README.md). CDK writes
 * these bodies as the gateway responses' templates (lib/cdk/constructs/api.ts); the twin's API server answers them
 * (lib/twin/http-server.ts).
 */
export const GATEWAY_MESSAGES = {
  /** MISSING_AUTHENTICATION_TOKEN, which the API answers with 404 instead of API Gateway's 403. */
  unknownRoute: 'Not Found',
  /** INTEGRATION_FAILURE (502): the function failed, or its event or result broke Lambda's limits. */
  integrationFailure: 'Internal server error',
  /** INTEGRATION_TIMEOUT (504): a non-streaming integration did not answer within 29 s. */
  integrationTimeout: 'Endpoint request timed out',
  /** THROTTLED (429): the stage's rate or burst limit. */
  throttled: 'Too Many Requests',
} as const;

/**
 * `Retry-After` of the gateway's own 429 and 5xx answers (stage throttle, a function that failed or crashed, a timed-out
 * integration): the same request may be sent again, and both APIs tell callers to retry the same request
 * (same external_id, same Idempotency-Key), which is safe. A second, as the functions' own 503s say.
 */
export const GATEWAY_RETRY_AFTER_SECONDS = 1;

/** The body of a gateway response with a fixed message. */
export const gatewayErrorBody = (message: string): string => JSON.stringify({ error: message, detail: message });

/**
 * The same body as a gateway response template for any message API Gateway has: `$context.error.messageString` is
 * the message already quoted as a JSON string.
 */
export const GATEWAY_ERROR_TEMPLATE = '{"error":$context.error.messageString,"detail":$context.error.messageString}';

/**
 * The CORS headers of API Gateway's own answers when the deployment allows browser origins (functions/shared/http/
 * cors.ts). A gateway response maps only fixed values or values of the request, with no logic, so it cannot check an
 * origin against the list. With one allowed origin it names that origin, so that its page sees a 429 or 502 as what it
 * is. With several it carries no CORS header at all: naming one would refuse the others, and echoing the caller's
 * `Origin` would allow any page (even `null`, a sandboxed frame's). Every allowed page then sees a gateway answer as a
 * network error (`TypeError: Failed to fetch`), while the functions, which check the list, answer each allowed origin
 * readably. Fixed values: CDK quotes them into the gateway responses (lib/cdk/constructs/api.ts), the twin's API server
 * sends them as they are (lib/twin/http-server.ts).
 */
export function gatewayCorsHeaders(origins: readonly string[]): Record<string, string> {
  if (origins.length !== 1) return {};
  return {
    'Access-Control-Allow-Origin': origins[0]!,
    'Access-Control-Expose-Headers': CORS_EXPOSE_HEADERS.join(', '),
    Vary: 'Origin',
  };
}
