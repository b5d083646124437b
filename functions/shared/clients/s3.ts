import { S3Client } from '@aws-sdk/client-s3';
import { optionalFlag } from '#shared/config.ts';
import { traced } from '#shared/powertools.ts';
import { meteredPerRequest } from './cost-metering.ts';

/**
 * The S3 client, created once per process. Locally `AWS_ENDPOINT_URL_S3` points it at the embedded store,
 * which needs path-style addressing (`S3_FORCE_PATH_STYLE=1`).
 */
const READ_COMMANDS = new Set(['GetObjectCommand', 'HeadObjectCommand', 'ListObjectsV2Command']);

function meteredS3Client(): S3Client {
  return meteredPerRequest(traced(new S3Client({ forcePathStyle: optionalFlag('S3_FORCE_PATH_STYLE') })), (commandName) =>
    READ_COMMANDS.has(commandName) ? { s3ReadRequests: 1 } : { s3WriteRequests: 1 },
  );
}

export const s3 = /* @__PURE__ */ meteredS3Client();
