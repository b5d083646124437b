import type { APIGatewayProxyResult } from 'aws-lambda';
import { DomainError, RateLimitedError, ValidationError } from '../errors.ts';

/**
 * The one place that maps errors to HTTP. Each API has its own body shape:
 * - webhook (Inbound Conversation Webhook API, section 7): `{error}` and, for 400, `details`;
 * - published (Published Workflow API, section 7): `{detail}`.
 * Typed errors carry messages written for callers; anything else becomes a generic 500 whose details stay in the log.
 */
export type ErrorBodyShape = 'webhook' | 'published';

const GENERIC_SERVER_ERROR = 'Internal server error';

export function errorResponse(error: unknown, shape: ErrorBodyShape): APIGatewayProxyResult {
  const statusCode = error instanceof DomainError ? error.statusCode : 500;
  const message = error instanceof DomainError ? error.message : GENERIC_SERVER_ERROR;
  const body: Record<string, unknown> = shape === 'webhook' ? { error: message } : { detail: message };
  if (error instanceof ValidationError) {
    if (shape === 'webhook') body.details = error.details;
    else body.detail = error.details.length > 0 ? `${message}: ${formatIssues(error)}` : message;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (error instanceof RateLimitedError) headers['retry-after'] = String(error.retryAfterSeconds);
  return { statusCode, headers, body: JSON.stringify(body) };
}

function formatIssues(error: ValidationError): string {
  return error.details.map((issue) => `${issue.field}: ${issue.message}`).join('; ');
}
