import {
  ModelNotReadyException,
  ModelTimeoutException,
  ServiceUnavailableException,
  ThrottlingException,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import {
  ConditionalCheckFailedException,
  InternalServerError,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
} from '@aws-sdk/client-dynamodb';
import { S3ServiceException } from '@aws-sdk/client-s3';
import { describe, expect, it, vi } from 'vitest';
import { BatchIncompleteError, NotFoundError } from '#shared/errors.ts';
import { isTransientServiceError, TRANSIENT_SERVICE_ERROR } from '#shared/store/transient-errors.ts';
import { withTaskStack } from '#shared/lambda/task-stack.ts';
import * as z from '#shared/zod.ts';

// Every handler stack needs its usage table; these requests bill nobody, so nothing is written to it.
vi.stubEnv('USAGE_TABLE', 'usage-not-written');
import { localContext } from '#lib/twin/api-gateway-event.ts';

const metadata = (httpStatusCode: number) => ({ $metadata: { httpStatusCode } });
const s3Error = (name: string, status: number) =>
  new S3ServiceException({ name, $fault: status >= 500 ? 'server' : 'client', ...metadata(status) });

describe('transient service errors', () => {
  it('recognises throttling and unavailability of DynamoDB, S3 and Bedrock', () => {
    const transient = [
      new ProvisionedThroughputExceededException({ message: 'slow down', ...metadata(400) }),
      new RequestLimitExceeded({ message: 'account limit', ...metadata(400) }),
      new InternalServerError({ message: 'oops', ...metadata(500) }),
      Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', ...metadata(400) }),
      s3Error('SlowDown', 503),
      s3Error('ServiceUnavailable', 503),
      s3Error('InternalError', 500),
      new ThrottlingException({ message: 'too many tokens', ...metadata(429) }),
      new ModelNotReadyException({ message: 'warming up', ...metadata(429) }),
      new ServiceUnavailableException({ message: 'unavailable', ...metadata(503) }),
      // Any 5xx answer, whatever its name, and a throttling flag the SDK set.
      Object.assign(new Error('bad gateway'), { name: 'UnknownError', ...metadata(502) }),
      Object.assign(new Error('throttled'), { name: 'SomethingElse', $retryable: { throttling: true }, ...metadata(400) }),
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      new BatchIncompleteError('BatchWriteItem', 3, 6),
    ];
    for (const error of transient) expect(isTransientServiceError(error), `${error.name}: ${error.message}`).toBe(true);
  });

  it('leaves real failures alone: refusals, conditions, bad input, model errors and non-errors', () => {
    const real = [
      new ConditionalCheckFailedException({ message: 'condition', ...metadata(400) }),
      Object.assign(new Error('Item size has exceeded the maximum allowed size'), { name: 'ValidationException', ...metadata(400) }),
      new ValidationException({ message: 'bad model id', ...metadata(400) }),
      new ModelTimeoutException({ message: 'too long', ...metadata(408) }),
      s3Error('NoSuchKey', 404),
      s3Error('AccessDenied', 403),
      new Error('Node x does not exist'),
      new NotFoundError('Execution x not found'),
      'ThrottlingException',
      undefined,
    ];
    for (const error of real) expect(isTransientServiceError(error), String((error as Error)?.name ?? error)).toBe(false);
  });

  it('reach the state machine under the one name its Retry knows, through the task middy stack; others keep their own', async () => {
    const context = localContext('test-task', 5_000);
    const failing = (error: unknown) =>
      withTaskStack(z.object({ id: z.string() }), async () => {
        throw error;
      });

    const throttled = new ProvisionedThroughputExceededException({ message: 'slow down', ...metadata(400) });
    const retried = await failing(throttled)({ id: 'x' }, context).catch((error: Error) => error);
    expect(retried).toBeInstanceOf(Error);
    expect(retried.name).toBe(TRANSIENT_SERVICE_ERROR);
    expect(retried.message).toBe('ProvisionedThroughputExceededException: slow down');

    const refused = new ConditionalCheckFailedException({ message: 'condition', ...metadata(400) });
    expect(await failing(refused)({ id: 'x' }, context).catch((error: Error) => error)).toBe(refused);

    const badInput = await failing(throttled)({ id: 7 }, context).catch((error: Error) => error);
    expect(badInput.name).toBe('ZodError');
  });
});
