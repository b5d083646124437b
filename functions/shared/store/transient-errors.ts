import { ServiceUnavailableError } from '../errors.ts';

/**
 * Throttling and service-unavailable answers of DynamoDB, S3 and Bedrock inside a state machine task. The SDK
 * retries each call a few times within the invocation; what is still failing after that is rethrown as one
 * named error, so the state machine's Retry on `TransientServiceError` waits it out with backoff and jitter
 * (costing nothing while it waits) and only a real failure reaches RecordFailure.
 */
export const TRANSIENT_SERVICE_ERROR = 'TransientServiceError';

export class TransientServiceError extends Error {
  constructor(readonly original: Error) {
    super(`${original.name}: ${original.message}`, { cause: original });
    this.name = TRANSIENT_SERVICE_ERROR;
  }
}

const TRANSIENT_NAMES = new Set([
  // DynamoDB
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'ThrottlingException',
  'InternalServerError',
  // S3
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'RequestTimeout',
  // Bedrock runtime (ConverseStream, also mid-stream)
  'ModelNotReadyException',
  'ServiceUnavailableException',
  'InternalServerException',
  'ModelStreamErrorException',
  // Any SDK: the generic throttling names
  'Throttling',
  'ThrottledException',
  'TooManyRequestsException',
]);

/** Connection failures the SDK gave up on: the service was unreachable for a moment, nothing was refused. */
const TRANSIENT_NETWORK_CODES = new Set(['ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN']);

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: { throttling?: unknown };
}

export function isTransientServiceError(error: unknown): boolean {
  if (!(error instanceof Error) || error instanceof TransientServiceError) return false;
  // Ours: a batch whose items stayed unprocessed after its own retries (BatchIncompleteError), and the like.
  if (error instanceof ServiceUnavailableError) return true;
  const shape = error as SdkErrorShape;
  if (typeof shape.name === 'string' && TRANSIENT_NAMES.has(shape.name)) return true;
  if (shape.$retryable?.throttling === true) return true;
  const status = shape.$metadata?.httpStatusCode;
  if (typeof status === 'number' && status >= 500) return true;
  return typeof shape.code === 'string' && TRANSIENT_NETWORK_CODES.has(shape.code);
}

/** The error as the state machine should see it: transient ones under the one name its Retry knows. */
export function forStateMachine(error: unknown): unknown {
  return isTransientServiceError(error) ? new TransientServiceError(error as Error) : error;
}
