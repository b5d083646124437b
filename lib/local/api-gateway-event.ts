import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';

/** Builds the REST API (v1 payload) proxy event API Gateway would send for this request. */
export function toProxyEvent(
  request: IncomingMessage,
  url: URL,
  resourcePath: string,
  pathParameters: Record<string, string>,
  body: Buffer,
): APIGatewayProxyEvent {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    const name = request.rawHeaders[i]!;
    const value = request.rawHeaders[i + 1]!;
    headers[name] = value;
    (multiValueHeaders[name] ??= []).push(value);
  }
  const query: Record<string, string> = {};
  const multiValueQuery: Record<string, string[]> = {};
  for (const [name, value] of url.searchParams) {
    query[name] = value;
    (multiValueQuery[name] ??= []).push(value);
  }
  const hasQuery = Object.keys(query).length > 0;
  const sourceIp = (request.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  const now = Date.now();
  return {
    resource: resourcePath,
    path: url.pathname,
    httpMethod: request.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiValueQuery : null,
    pathParameters,
    stageVariables: null,
    body: body.byteLength > 0 ? body.toString('utf8') : null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: undefined,
      protocol: `HTTP/${request.httpVersion}`,
      httpMethod: request.method ?? 'GET',
      path: url.pathname,
      stage: 'local',
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
