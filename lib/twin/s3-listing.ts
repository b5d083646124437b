import { readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { listPage, openToken, sealToken, type ListPosition } from './s3-list-page.ts';

/**
 * ListObjectsV2 on the embedded S3, answered here instead of by s3rver, whose own answer cannot page: it seals its
 * continuation tokens with DES, which OpenSSL 3's default provider (Node 17 and later) no longer has, so a truncated
 * listing fails with InternalError; and it cuts pages in the order it walks its directories, which is not S3's key
 * order (`a-b` before `a`), so a later page could skip keys. The rest of GET Bucket (ListObjects version 1) stays
 * s3rver's.
 */
const require = createRequire(import.meta.url);

type Query = Record<string, string | string[] | undefined>;
interface Store {
  rootDirectory: string;
  getMetadata(bucket: string, key: string): Promise<Record<string, unknown>>;
}
interface Context {
  params: { bucket: string };
  query: Query;
  store: Store;
  body: unknown;
}
interface BucketController {
  getBucket(ctx: Context): Promise<void>;
}
type S3ErrorClass = new (code: string, message: string, detail?: Record<string, unknown>) => Error;
type S3ObjectClass = new (
  bucket: string,
  key: string,
  content: null,
  metadata: Record<string, unknown>,
) => { key: string; size: number; lastModifiedDate: Date; metadata: Record<string, string> };

const OBJECT_SUFFIX = '._S3rver_object';
const MAX_KEYS_ARGUMENT = 2_147_483_647;
const INSTALLED = Symbol.for('twin.s3-listing');

/** Makes the embedded S3 answer ListObjectsV2 as S3 does; loaded before s3rver starts, once per process. */
export function installS3Listing(): void {
  const controller = require('s3rver/lib/controllers/bucket.js') as BucketController & { [INSTALLED]?: true };
  if (controller[INSTALLED]) return;
  const S3Error = require('s3rver/lib/models/error.js') as S3ErrorClass;
  const S3Object = require('s3rver/lib/models/object.js') as S3ObjectClass;
  const { DUMMY_ACCOUNT } = require('s3rver/lib/models/account.js') as { DUMMY_ACCOUNT: { id: string; displayName: string } };
  const original = controller.getBucket.bind(controller);
  controller.getBucket = async (ctx) => {
    if (one(ctx.query, 'list-type') !== '2') return original(ctx);
    const request = parseRequest(ctx.params.bucket, ctx.query, S3Error);
    const page = listPage(await keysUnder(join(ctx.store.rootDirectory, ctx.params.bucket), request.prefix), request);
    const objects = await Promise.all(
      page.keys.map(async (key) => {
        const metadata = await ctx.store.getMetadata(ctx.params.bucket, key).catch((error: NodeJS.ErrnoException) => {
          // Deleted since the walk: no longer listed, as s3rver does.
          if (error.code === 'ENOENT') return undefined;
          throw error;
        });
        return metadata && new S3Object(ctx.params.bucket, key, null, metadata);
      }),
    );
    const listed = objects.filter((object) => object !== undefined);
    ctx.body = {
      ListBucketResult: {
        '@': { xmlns: 'http://s3.amazonaws.com/doc/2006-03-01/' },
        Name: ctx.params.bucket,
        Prefix: request.prefix,
        StartAfter: one(ctx.query, 'start-after'),
        ContinuationToken: one(ctx.query, 'continuation-token'),
        NextContinuationToken: page.next && sealToken(ctx.params.bucket, page.next),
        KeyCount: listed.length + page.commonPrefixes.length,
        MaxKeys: one(ctx.query, 'max-keys') ?? 1000,
        Delimiter: request.delimiter || undefined,
        IsTruncated: page.truncated,
        Contents: listed.map((object) => ({
          Key: object.key,
          LastModified: object.lastModifiedDate.toISOString(),
          ETag: object.metadata.etag,
          Size: object.size,
          Owner: request.fetchOwner ? { ID: DUMMY_ACCOUNT.id, DisplayName: DUMMY_ACCOUNT.displayName } : undefined,
          StorageClass: 'STANDARD',
        })),
        CommonPrefixes: page.commonPrefixes.map((prefix) => ({ Prefix: prefix })),
      },
    };
  };
  controller[INSTALLED] = true;
}

const one = (query: Query, name: string): string | undefined => {
  const value = query[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The request's arguments, refused with S3's own errors. */
function parseRequest(bucket: string, query: Query, S3Error: S3ErrorClass) {
  const maxKeysText = one(query, 'max-keys');
  let maxKeys = 1000;
  if (maxKeysText !== undefined) {
    if (!/^-?\d+$/.test(maxKeysText))
      throw new S3Error('InvalidArgument', 'Provided max-keys not an integer or within integer range', {
        ArgumentName: 'max-keys',
        ArgumentValue: maxKeysText,
      });
    maxKeys = Number(maxKeysText);
    if (maxKeys < 0 || maxKeys > MAX_KEYS_ARGUMENT)
      throw new S3Error('InvalidArgument', `Argument maxKeys must be an integer between 0 and ${MAX_KEYS_ARGUMENT}`, {
        ArgumentName: 'maxKeys',
        ArgumentValue: maxKeys,
      });
  }
  if ('marker' in query)
    throw new S3Error('InvalidArgument', 'Marker unsupported with REST.GET.BUCKET in list-type=2', { ArgumentName: 'marker' });
  const encoding = one(query, 'encoding-type');
  if (encoding !== undefined && encoding !== 'url')
    throw new S3Error('InvalidArgument', 'Invalid Encoding Method specified in Request', { ArgumentName: 'encoding-type' });
  // The product never asks for URL-encoded keys; answering them unencoded would be kinder than S3.
  if (encoding === 'url') throw new S3Error('NotImplemented', 'The twin does not implement encoding-type=url on ListObjectsV2');
  let position: ListPosition | undefined;
  const token = one(query, 'continuation-token');
  if (token !== undefined) {
    position = openToken(bucket, token);
    if (!position)
      throw new S3Error('InvalidArgument', 'The continuation token provided is incorrect', { ArgumentName: 'continuation-token' });
  } else {
    const startAfter = one(query, 'start-after');
    if (startAfter) position = { after: startAfter, rolledUp: false };
  }
  return {
    prefix: one(query, 'prefix') ?? '',
    delimiter: one(query, 'delimiter') ?? '',
    position,
    maxKeys,
    fetchOwner: one(query, 'fetch-owner') === 'true',
  };
}

/**
 * Every key stored under `prefix`, in no particular order: s3rver keeps an object as `<dirs of its key>/<last
 * part>._S3rver_object`, so only directories on the prefix's path are walked.
 */
async function keysUnder(bucketPath: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  const visit = async (directory: string, keyDirectory: string): Promise<void> => {
    const entries = await readdir(directory, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    for (const entry of entries) {
      if (entry.isDirectory()) {
        const inner = `${keyDirectory}${entry.name}/`;
        if (inner.startsWith(prefix) || prefix.startsWith(inner)) await visit(join(directory, entry.name), inner);
      } else if (entry.name.endsWith(OBJECT_SUFFIX)) {
        keys.push(`${keyDirectory}${entry.name.slice(0, -OBJECT_SUFFIX.length)}`);
      }
    }
  };
  await visit(bucketPath, '');
  return keys;
}
