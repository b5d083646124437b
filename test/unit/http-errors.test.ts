import { describe, expect, it } from 'vitest';
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { errorResponse } from '#shared/http/http-errors.ts';

/** What a caller reads when a dependency stayed throttled or down through the SDK's own retries. */
const sdkError = (name: string, status: number) =>
  Object.assign(new Error(`${name}: the service says no`), { name, $metadata: { httpStatusCode: status } });

describe('errors that reach a handler', () => {
  it('answer a dependency still throttled or failing after the SDK retries with 503 and Retry-After, never its AWS name', () => {
    const throttled = new ProvisionedThroughputExceededException({
      message: 'The level of configured provisioned throughput for the table was exceeded.',
      $metadata: { httpStatusCode: 400 },
    });
    for (const error of [
      throttled,
      sdkError('InternalServerError', 500),
      sdkError('SlowDown', 503),
      sdkError('ThrottlingException', 400),
      sdkError('InternalError', 500),
    ]) {
      for (const shape of ['webhook', 'published'] as const) {
        const answer = errorResponse(error, shape);
        expect(answer.statusCode, error.name).toBe(503);
        expect(answer.headers).toMatchObject({ 'retry-after': '1', 'content-type': 'application/json' });
        expect(answer.body).not.toContain(error.name);
        expect(JSON.parse(answer.body)).toEqual(
          shape === 'webhook' ? { error: 'The service is busy; retry later' } : { detail: 'The service is busy; retry later' },
        );
      }
    }
  });

  it('keep an error that is nobody’s throttle a 500 whose details stay in the log', () => {
    for (const error of [new TypeError('x is undefined'), sdkError('ValidationException', 400), sdkError('AccessDeniedException', 400)]) {
      const answer = errorResponse(error, 'published');
      expect(answer.statusCode, error.name).toBe(500);
      expect(JSON.parse(answer.body)).toEqual({ detail: 'Internal server error' });
    }
  });
});
