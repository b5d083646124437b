import type { MiddlewareObj } from '@middy/core';

/** `@aws-lambda-powertools/tracer/middleware` when SDK tracing is off (see tracer-off.ts): a middleware that does nothing. */
export function captureLambdaHandler(_tracer?: unknown): MiddlewareObj {
  return { before: () => undefined };
}
