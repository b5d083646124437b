import { CORS_EXPOSE_HEADERS } from '#shared/http/cors.ts';

/**
 * What API Gateway answers by itself, with no function involved: an unknown path or method, a Lambda integration
 * that failed or timed out, the stage throttle. One REST API serves both specs and a gateway response cannot tell
 * them apart, so its body carries the message under both names the specs' clients read: `error` (webhook spec,
 * section 7: `{error: string}`) and `detail` (published spec, section 7). CDK writes these bodies as the gateway
 * responses' templates (lib/cdk/constructs/api.ts); the twin's API server answers them (lib/twin/http-server.ts).
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

/** The body of a gateway response with a fixed message. */
export const gatewayErrorBody = (message: string): string => JSON.stringify({ error: message, detail: message });

/**
 * The same body as a gateway response template for any message API Gateway has: `$context.error.messageString` is
 * the message already quoted as a JSON string.
 */
export const GATEWAY_ERROR_TEMPLATE = '{"error":$context.error.messageString,"detail":$context.error.messageString}';

/** Where a gateway response header's value comes from: a fixed value, or a header of the request. */
export type GatewayHeaderValue = { readonly fixed: string } | { readonly requestHeader: string };

/**
 * The CORS headers of API Gateway's own answers when the deployment allows browser origins (functions/shared/http/
 * cors.ts), so that a page sees a 429 or 502 as what it is, not as `TypeError: Failed to fetch`. A gateway
 * response takes only fixed values or values of the request, with no logic, so it cannot check an origin against
 * the list: with one allowed origin it names that origin, with several it echoes the caller's `Origin`. What that
 * lets another page read is a fixed error message, never data: every other answer comes from a function, which
 * checks the list, and a page on another origin never gets past the preflight (a function's answer) to send a key.
 */
export function gatewayCorsHeaders(origins: readonly string[]): Record<string, GatewayHeaderValue> {
  if (origins.length === 0) return {};
  return {
    'Access-Control-Allow-Origin': origins.length === 1 ? { fixed: origins[0]! } : { requestHeader: 'Origin' },
    'Access-Control-Expose-Headers': { fixed: CORS_EXPOSE_HEADERS.join(', ') },
    Vary: { fixed: 'Origin' },
  };
}
