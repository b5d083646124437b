import type { APIGatewayProxyResult } from 'aws-lambda';

/*
 * An HTTP API's own answers, which nothing can shape (an HTTP API has no gateway responses): the body is always
 * `{"message": ...}` and no header says when to retry. The webhook API's functions answer every refusal its OpenAPI document names
 * before any of these could (functions/inbound/README.md says what a sender still meets).
 * docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html and http-api-quotas.html.
 */
export const HTTP_API_MESSAGES = {
  /** No route matched and the API has no `$default` route. */
  notFound: 'Not Found',
  /** The function failed, or its event or result broke Lambda's limits: 500. */
  integrationFailure: 'Internal Server Error',
  /** The integration did not answer within 30 s: 503. */
  integrationTimeout: 'Service Unavailable',
  /** A body over 10 MB, the HTTP API's payload limit: 413. */
  payloadTooLarge: 'Request Entity Too Large',
  /** The stage throttle: 429. */
  throttled: 'Too Many Requests',
} as const;

/** An HTTP API's payload limit, 10 MB (http-api-quotas.html). */
export const HTTP_API_MAX_BODY_BYTES = 10 * 1024 * 1024;

export function httpApiAnswer(statusCode: number, message: string): APIGatewayProxyResult {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message }) };
}

/**
 * A function's result as an HTTP API reads it in payload format 2.0: with a numeric `statusCode`, its status,
 * `headers`, `cookies` (one Set-Cookie each), `body` and `isBase64Encoded`; `multiValueHeaders` is not read (format
 * 1.0 only). Any other JSON value is a 200 whose body is that value as JSON. A `statusCode` that is no status is a 500.
 */
export function httpApiResult(result: unknown): APIGatewayProxyResult {
  const candidate = result as Record<string, unknown> | null;
  if (!candidate || typeof candidate !== 'object' || !('statusCode' in candidate)) {
    return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(result ?? null) };
  }
  const statusCode = candidate.statusCode;
  if (typeof statusCode !== 'number' || !Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) {
    return httpApiAnswer(500, HTTP_API_MESSAGES.integrationFailure);
  }
  const headers = Object.fromEntries(
    Object.entries((candidate.headers as Record<string, unknown> | undefined) ?? {}).map(([name, value]) => [name, String(value)]),
  );
  const cookies = Array.isArray(candidate.cookies) ? candidate.cookies.map(String) : [];
  return {
    statusCode,
    headers,
    ...(cookies.length > 0 ? { multiValueHeaders: { 'set-cookie': cookies } } : {}),
    body: typeof candidate.body === 'string' ? candidate.body : '',
    isBase64Encoded: candidate.isBase64Encoded === true,
  };
}
