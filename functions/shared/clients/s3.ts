import { S3Client } from '@aws-sdk/client-s3';
import { optionalFlag } from '#shared/config.ts';
import { traced } from '../lambda/powertools.ts';
import { hotPathClientConfig, withoutSdkLogging } from './hot-path.ts';
import { recordCost } from '../metering/cost-meter.ts';
import { metered } from './cost-metering.ts';

/**
 * The S3 client, created once per process. Locally `AWS_ENDPOINT_URL_S3` points it at the embedded store,
 * which needs path-style addressing (`S3_FORCE_PATH_STYLE=1`).
 */
const READ_COMMANDS = new Set(['GetObjectCommand', 'HeadObjectCommand']);
/** S3 bills a LIST as a tier-1 request, with PUT, COPY and POST (aws.amazon.com/s3/pricing), and it stores nothing. */
const LIST_COMMANDS = new Set(['ListObjectsV2Command']);

/** Bytes of a body known before sending (a buffer or text); a stream's parts are counted as each part goes. */
function bodyBytes(body: unknown): number {
  if (typeof body === 'string') return Buffer.byteLength(body, 'utf8');
  if (body instanceof Uint8Array) return body.byteLength;
  return 0;
}

function meteredS3Client(): S3Client {
  return metered(
    traced(withoutSdkLogging(new S3Client({ ...hotPathClientConfig(), forcePathStyle: optionalFlag('S3_FORCE_PATH_STYLE') }))),
    (call) => {
      recordCost(
        READ_COMMANDS.has(call.commandName)
          ? { s3ReadRequests: 1 }
          : LIST_COMMANDS.has(call.commandName)
            ? { s3WriteRequests: 1 }
            : { s3WriteRequests: 1, s3StoredBytes: bodyBytes(call.input.Body) },
      );
      return call.proceed();
    },
  );
}

export const s3 = /* @__PURE__ */ meteredS3Client();
