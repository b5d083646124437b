import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';

/** Large request bodies in S3: DynamoDB items stop at 400 KB, webhook bodies go to 1 MiB. */
export function createBodyStore(client: S3Client, bucket: string) {
  return {
    async put(key: string, body: Uint8Array, contentEncoding: string): Promise<void> {
      await client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: 'application/json', ContentEncoding: contentEncoding }),
      );
    },
    /** The nightly collection reads a large body back to hand its conversation on. */
    async get(key: string): Promise<Uint8Array> {
      const result = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return result.Body!.transformToByteArray();
    },
    async delete(key: string): Promise<void> {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
  };
}

export type BodyStore = ReturnType<typeof createBodyStore>;
