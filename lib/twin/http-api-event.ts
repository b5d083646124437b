import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/*
 * What an HTTP API sends a Lambda proxy integration, payload format 2.0
 * (docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html): header names in lower
 * case, a repeated header or query parameter joined with commas, cookies apart, no `body` when there is none.
 */

/** The `$default` stage: no stage path in the URL. */
const HTTP_API_STAGE = '$default';
export const DEFAULT_ROUTE_KEY = '$default';

/**
 * Whether an HTTP API hands a body over as text: only for `text/*`, `application/json`, `application/xml` and
 * `application/javascript` (parameters aside); any other type, and none, as base64. AWS does not document the list;
 * it is the one observed on AWS (github.com/ministackorg/ministack/pull/766). As text, bytes that are not UTF-8
 * arrive as U+FFFD (lambda/invoke-payload.ts), which is why the webhook refuses a raw U+FFFD in such a body.
 */
function isTextBody(contentType: string | undefined): boolean {
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return mediaType.startsWith('text/') || ['application/json', 'application/xml', 'application/javascript'].includes(mediaType);
}

export interface HttpApiTarget {
  /** `GET /api/v1/webhooks/{token}/ping`, or `$default`. */
  routeKey: string;
  pathParameters?: Record<string, string>;
  /** A body was sent: the event says how it will be put (its `body` stays unset until the function's runtime puts it). */
  hasBody: boolean;
}

/** The 2.0 event for `request`, but for its `body`, which the function's runtime puts there (function-host.ts). */
export function toHttpApiEvent(request: IncomingMessage, url: URL, target: HttpApiTarget): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    const name = request.rawHeaders[i]!.toLowerCase();
    const value = request.rawHeaders[i + 1]!;
    if (name === 'cookie')
      cookies.push(
        ...value
          .split(';')
          .map((cookie) => cookie.trim())
          .filter(Boolean),
      );
    else if (!(name in FORWARDED)) headers[name] = name in headers ? `${headers[name]},${value}` : value;
  }
  const sourceIp = (request.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  // API Gateway sets these itself, whatever the client sent.
  headers['x-forwarded-for'] = [request.headers['x-forwarded-for'], sourceIp].filter(Boolean).join(', ');
  headers['x-forwarded-port'] = String(request.socket.localPort ?? 80);
  headers['x-forwarded-proto'] = 'http';
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) query[name] = name in query ? `${query[name]},${value}` : value;
  const now = new Date();
  const method = request.method ?? 'GET';
  const host = request.headers.host ?? 'localhost';
  return {
    version: '2.0',
    routeKey: target.routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    ...(target.pathParameters ? { pathParameters: target.pathParameters } : {}),
    isBase64Encoded: target.hasBody && !isTextBody(request.headers['content-type']),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: host,
      domainPrefix: host.split('.')[0]!,
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp,
        userAgent: request.headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: target.routeKey,
      stage: HTTP_API_STAGE,
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
  };
}

const FORWARDED = { 'x-forwarded-for': true, 'x-forwarded-port': true, 'x-forwarded-proto': true };
