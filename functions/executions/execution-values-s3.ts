import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { ObjectStore } from './execution-values.ts';

/** Large run values as JSON objects in the bodies bucket (keys under `executions/`, see execution-values.ts). */
export function createS3ObjectStore(client: S3Client, bucket: string): ObjectStore {
  return {
    async put(key, json) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: json, ContentType: 'application/json' }));
    },
    async get(key) {
      const result = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return result.Body!.transformToString('utf8');
    },
  };
}
