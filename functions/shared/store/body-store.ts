import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';

/** What an object's bytes are, as S3 tells whoever downloads it. */
export interface ObjectEncoding {
  contentType: string;
  contentEncoding?: string;
}

/**
 * Bodies too large for their DynamoDB item (items stop at 400 KB, webhook bodies go to 1 MiB), as bytes: their
 * format is their owner's (functions/inbound/stored-event.ts).
 */
export function createBodyStore(client: S3Client, bucket: string) {
  return {
    async put(key: string, body: Uint8Array, encoding: ObjectEncoding): Promise<void> {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentType: encoding.contentType,
          ContentEncoding: encoding.contentEncoding,
        }),
      );
    },
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
