/** Where the Inbound Conversation Webhook API's routes live; the Published Workflow API's are under /api/v1/published. */
export const WEBHOOKS_PREFIX = '/api/v1/webhooks';

/**
 * Routes grouped as the operator watches them: webhooks, the Published API's quick answers, and its long ones
 * (blocking execute and the event streams, whose latency is the execution's, not the API's). Each request adds to its
 * group's `HttpRequests`, `Http5xx` and `HttpLatency` metrics; the alarms are per group (lib/cdk/constructs/operations.ts).
 */
export const ROUTE_GROUPS = ['webhooks', 'published', 'published-long'] as const;
export type RouteGroup = (typeof ROUTE_GROUPS)[number];

export function routeGroupOf(route: { readonly path: string; readonly streaming?: boolean }): RouteGroup {
  if (route.path.startsWith(`${WEBHOOKS_PREFIX}/`)) return 'webhooks';
  return route.streaming ? 'published-long' : 'published';
}

/**
 * The API Gateway API serving a route: the Published Workflow API on a REST API (response streaming, gateway
 * responses), the webhook API on an HTTP API (a third of the price per request; payload format 2.0).
 */
export type GatewayKind = 'restApi' | 'httpApi';

export function gatewayOf(route: { readonly path: string }): GatewayKind {
  return route.path.startsWith(`${WEBHOOKS_PREFIX}/`) ? 'httpApi' : 'restApi';
}
