import type { APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda';

/*
 * A request as API Gateway hands it to a function. The Published Workflow API is a REST API (payload format 1.0); the
 * webhook API is an HTTP API (payload format 2.0, docs.aws.amazon.com/apigateway/latest/developerguide/
 * http-api-develop-integrations-lambda.html). A handler reads a request only through these accessors, so it takes
 * whichever event its route's API sends.
 */
export type GatewayRequest = APIGatewayProxyEvent | APIGatewayProxyEventV2;

export function isHttpApiEvent(request: GatewayRequest): request is APIGatewayProxyEventV2 {
  return (request as { version?: unknown }).version === '2.0';
}

export function requestMethod(request: GatewayRequest): string {
  return isHttpApiEvent(request) ? request.requestContext.http.method : request.httpMethod;
}

/** The path the API routed by: after the REST API's stage, after a custom domain's API mapping on either API. */
export function routedPath(request: GatewayRequest): string {
  return isHttpApiEvent(request) ? request.rawPath : request.path;
}

/**
 * The route's path template (`/api/v1/webhooks/{token}/events`), or undefined for an HTTP API's `$default` route,
 * which takes every request no other route matches.
 */
export function routeTemplate(request: GatewayRequest): string | undefined {
  if (!isHttpApiEvent(request)) return request.resource;
  const [, template] = /^[A-Z]+ (\S+)$/.exec(request.routeKey) ?? [];
  return template;
}

/** The address the request came from, as API Gateway saw it. */
export function sourceIp(request: GatewayRequest): string | undefined {
  return isHttpApiEvent(request) ? request.requestContext?.http?.sourceIp : request.requestContext?.identity?.sourceIp;
}
