import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { IMAGE_URL_TTL_SECONDS } from '#shared/limits.ts';

export interface StoredImage {
  key: string;
  url: string;
  mime_type: 'image/png';
}

/**
 * Generated images live under their execution (`executions/<id>/images/`), so the execution's other values and its
 * retention cover them; the URL is a presigned GET for an hour. Presigning is local (no request), but a URL signed
 * with a Lambda role's session credentials dies with that session, which can be sooner than the hour.
 */
export function createImageStore(s3: S3Client, bucket: string) {
  return {
    async put(executionId: string, name: string, png: Buffer): Promise<StoredImage> {
      const key = `executions/${executionId}/images/${name}.png`;
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: png, ContentType: 'image/png' }));
      const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: IMAGE_URL_TTL_SECONDS });
      return { key, url, mime_type: 'image/png' };
    },
  };
}

export type ImageStore = ReturnType<typeof createImageStore>;
