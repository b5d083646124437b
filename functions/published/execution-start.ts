import type { Context } from 'aws-lambda';
import { routePath } from '#functions/routes.ts';
import { ValidationError } from '#shared/errors.ts';
import { header, type HttpRequest } from '#shared/http/http-stack.ts';
import { IDEMPOTENCY_KEY_PATTERN, MAX_IDEMPOTENCY_KEY_LENGTH } from '#shared/limits.ts';
import { externalUrl } from '#shared/http/external-url.ts';

/* What execute and stream share at the edge: the caller's Idempotency-Key, and the headers that name the execution. */

const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/**
 * The request's `Idempotency-Key`, or undefined without one. A key is taken exactly as sent (quotes, if any, are part
 * of it); one the service cannot hold is a 400 before anything is read or written.
 */
export function idempotencyKey(request: HttpRequest): string | undefined {
  return parseIdempotencyKey(header(request, IDEMPOTENCY_KEY_HEADER));
}

export function parseIdempotencyKey(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!IDEMPOTENCY_KEY_PATTERN.test(value)) {
    throw new ValidationError([
      { field: IDEMPOTENCY_KEY_HEADER, message: `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters` },
    ]);
  }
  return value;
}

/**
 * Headers that name the execution in the status line, before any byte of the body: a client whose connection drops before
 * the first event (or whose answer never came) knows which run to follow. `X-Execution-Id` is the id; `Content-Location`
 * is where the same content continues (`routeId`'s URL for the execution: the status for execute, the event stream for stream).
 */
export function executionHeaders(request: HttpRequest, routeId: string, executionId: string): Record<string, string> {
  return { 'x-execution-id': executionId, 'content-location': externalUrl(request, routePath(routeId, { execution_id: executionId })) };
}

/** When this invocation ends for certain: Lambda stops it at its timeout. */
export function invocationDeadline(now: number, context: Pick<Context, 'getRemainingTimeInMillis'>): number {
  return now + context.getRemainingTimeInMillis();
}
