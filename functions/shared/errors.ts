/**
 * Typed errors thrown by domain code. Only `http-errors.ts` turns them into HTTP responses,
 * so domain code never knows which status code or body shape it ends up as.
 */
import { wholeSecondsAtLeastOne } from './time.ts';

export interface FieldIssue {
  field: string;
  message: string;
}

export abstract class DomainError extends Error {
  abstract readonly statusCode: number;
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends DomainError {
  readonly statusCode = 400;
  constructor(
    readonly details: FieldIssue[],
    message = 'Validation error',
  ) {
    super(message);
  }
}

/** The Published Workflow API answers 400 when the project has no active publication. */
export class BadRequestError extends DomainError {
  readonly statusCode = 400;
}

export class UnauthorizedError extends DomainError {
  readonly statusCode = 401;
}

export class ForbiddenError extends DomainError {
  readonly statusCode = 403;
}

export class NotFoundError extends DomainError {
  readonly statusCode = 404;
}

export class RequestTimeoutError extends DomainError {
  readonly statusCode = 408;
}

export class ConflictError extends DomainError {
  readonly statusCode = 409;
}

export class PayloadTooLargeError extends DomainError {
  readonly statusCode = 413;
}

/**
 * 422 Unprocessable Content (RFC 9110): the request is well-formed but cannot be done as asked, such as an
 * `Idempotency-Key` already used for a different request.
 */
export class UnprocessableContentError extends DomainError {
  readonly statusCode = 422;
}

export class RateLimitedError extends DomainError {
  readonly statusCode = 429;
  /** Whole seconds, at least 1, as the `Retry-After` header wants. */
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.retryAfterSeconds = wholeSecondsAtLeastOne(retryAfterMs);
  }
}

/**
 * 503: something the request needs is busy or its outcome unknown; the same request, retried, is safe. Callers are
 * told when (`Retry-After`): a second unless the refusal knows better.
 */
export class ServiceUnavailableError extends DomainError {
  readonly statusCode = 503;
  /** Whole seconds, at least 1, as the `Retry-After` header wants. */
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterMs = 1_000) {
    super(message);
    this.retryAfterSeconds = wholeSecondsAtLeastOne(retryAfterMs);
  }
}

/**
 * DynamoDB still left part of a batch unprocessed after every retry (sustained throttling). Nothing is
 * assumed about the missing part: the request is refused with 503 and the caller retries later.
 */
export class BatchIncompleteError extends ServiceUnavailableError {
  constructor(
    readonly operation: 'BatchGetItem' | 'BatchWriteItem',
    readonly unprocessed: number,
    attempts: number,
  ) {
    super(`The data store is busy (${operation} left ${unprocessed} item(s) unprocessed after ${attempts} attempts); retry later`);
  }
}
