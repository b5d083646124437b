import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';

const LOWER_FORWARDED = { 'x-forwarded-for': true, 'x-forwarded-port': true, 'x-forwarded-proto': true };

/** Where a request arrived: the stage it named, and the path the client used (stage included). */
export interface RequestTarget {
  stage: string;
  /** The path after the stage, as API Gateway puts it in `event.path`. */
  path: string;
  /** The path as requested, as API Gateway puts it in `requestContext.path`. */
  requestPath: string;
}

/** What API Gateway assumes of a request that names no Content-Type. */
const DEFAULT_CONTENT_TYPE = 'application/json';

/**
 * Whether API Gateway hands this request's body over as base64: its media type (parameters aside, any case) matches
 * an entry of the API's binary media types: the same type, the wildcard of its top-level type, or the one of all.
 */
export function isBinaryMediaType(contentType: string | undefined, binaryMediaTypes: readonly string[]): boolean {
  const mediaType = (contentType?.split(';')[0]?.trim() || DEFAULT_CONTENT_TYPE).toLowerCase();
  const [type] = mediaType.split('/');
  return binaryMediaTypes.some((entry) => {
    const wanted = entry.toLowerCase();
    return wanted === '*/*' || wanted === mediaType || wanted === `${type}/*`;
  });
}

/**
 * Builds the REST API (v1 payload) proxy event API Gateway would send for this request, but for its `body`: null here,
 * the request's bytes once the function's runtime puts them there (function-host.ts `body`), as base64 when
 * `isBase64Encoded` (the API's binary media types matched) or else as text.
 */
export function toProxyEvent(
  request: IncomingMessage,
  url: URL,
  target: RequestTarget,
  resourcePath: string,
  pathParameters: Record<string, string>,
  isBase64Encoded = false,
): APIGatewayProxyEvent {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  const sourceIp = (request.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  const forwarded: Record<string, string> = {
    'X-Forwarded-For': [request.headers['x-forwarded-for'], sourceIp].filter(Boolean).join(', '),
    'X-Forwarded-Port': String(request.socket.localPort ?? 80),
    'X-Forwarded-Proto': 'http',
  };
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    const name = request.rawHeaders[i]!;
    const value = request.rawHeaders[i + 1]!;
    if (name.toLowerCase() in LOWER_FORWARDED) continue;
    headers[name] = value;
    (multiValueHeaders[name] ??= []).push(value);
  }
  // API Gateway sets these itself, whatever the client sent.
  for (const [name, value] of Object.entries(forwarded)) {
    headers[name] = value;
    multiValueHeaders[name] = [value];
  }
  const query: Record<string, string> = {};
  const multiValueQuery: Record<string, string[]> = {};
  for (const [name, value] of url.searchParams) {
    query[name] = value;
    (multiValueQuery[name] ??= []).push(value);
  }
  const hasQuery = Object.keys(query).length > 0;
  const now = Date.now();
  return {
    resource: resourcePath,
    path: target.path,
    httpMethod: request.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiValueQuery : null,
    pathParameters,
    stageVariables: null,
    body: null,
    isBase64Encoded,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: undefined,
      protocol: `HTTP/${request.httpVersion}`,
      httpMethod: request.method ?? 'GET',
      path: target.requestPath,
      stage: target.stage,
      requestId: randomUUID(),
      requestTimeEpoch: now,
      resourceId: 'local',
      resourcePath,
      identity: {
        sourceIp,
        userAgent: request.headers['user-agent'] ?? null,
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        user: null,
        userArn: null,
      },
    },
  };
}

/** The Lambda context the handler would get, with the deadline API Gateway's integration timeout sets. */
export function localContext(functionName: string, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
