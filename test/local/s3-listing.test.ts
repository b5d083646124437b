import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  paginateListObjectsV2,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_BUCKET, LOCAL_CREDENTIALS, LOCAL_REGION, startLocalStores, type LocalStores } from '#lib/twin/stores.ts';

/**
 * ListObjectsV2 on the embedded S3 pages as S3 does (docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html):
 * "returns some or all (up to 1,000) of the objects in a bucket", "List results are always returned in UTF-8 binary
 * order", `KeyCount` "the number of keys returned with this request", `NextContinuationToken` "sent when
 * `isTruncated` is true ... obfuscated and is not a real key", and `StartAfter` "where you want Amazon S3 to start
 * listing from ... after this specified key". A token S3 did not hand out is refused with 400 InvalidArgument, "The
 * continuation token provided is incorrect".
 */
const MANY = 1050;
const manyKeys = Array.from({ length: MANY }, (_, i) => `many/${i}.json`);
/** UTF-8 binary order: `a` before `a-b` (its directory walk put `a-b` first), U+FFFD before U+1F600 (JavaScript's sort puts it after). */
const ORDERED = ['order/a', 'order/a-b', 'order/a.b', 'order/a/b', 'order/z', 'order/\u00e9', 'order/\ufffd', 'order/\u{1f600}'];
const utf8Sorted = (keys: readonly string[]) => [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

let dataDir: string;
let stores: LocalStores;
let s3: S3Client;

async function putAll(keys: readonly string[], bucket = LOCAL_BUCKET): Promise<void> {
  const BATCH = 50;
  for (let at = 0; at < keys.length; at += BATCH)
    await Promise.all(keys.slice(at, at + BATCH).map((Key) => s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: 'x' }))));
}

async function allPages(input: ConstructorParameters<typeof ListObjectsV2Command>[0], pageSize?: number) {
  const pages: ListObjectsV2CommandOutput[] = [];
  for await (const page of paginateListObjectsV2({ client: s3, pageSize }, input)) pages.push(page);
  return pages;
}

async function refusal(input: ConstructorParameters<typeof ListObjectsV2Command>[0]) {
  const error = await s3.send(new ListObjectsV2Command(input)).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(S3ServiceException);
  const refused = error as S3ServiceException;
  return { name: refused.name, status: refused.$metadata.httpStatusCode, message: refused.message };
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 's3-listing-'));
  stores = await startLocalStores(dataDir, { dynamodb: 0, s3: 0 });
  s3 = new S3Client({ endpoint: stores.s3Endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
  await putAll([...manyKeys, ...ORDERED, 'tree/a/1', 'tree/a/2', 'tree/b', 'tree/c/1', 'tree/d']);
  await s3.send(new CreateBucketCommand({ Bucket: 'other-bucket' }));
  await putAll(['many/1.json', 'many/2.json'], 'other-bucket');
}, 120_000);
afterAll(async () => {
  s3?.destroy();
  await stores?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('ListObjectsV2 on the embedded S3', () => {
  it('pages past 1,000 keys through the SDK paginator: every key once, in order, 1,000 a page', async () => {
    const pages = await allPages({ Bucket: LOCAL_BUCKET, Prefix: 'many/' });
    expect(pages.map((page) => [page.KeyCount, page.Contents?.length, page.IsTruncated])).toEqual([
      [1000, 1000, true],
      [50, 50, false],
    ]);
    expect(pages.flatMap((page) => page.Contents!.map((object) => object.Key))).toEqual(utf8Sorted(manyKeys));
    const [first, last] = pages;
    expect(first!.NextContinuationToken).toEqual(expect.any(String));
    expect(last!.ContinuationToken).toBe(first!.NextContinuationToken);
    expect(last!.NextContinuationToken).toBeUndefined();
    // Opaque: the last key of the page is in it neither as text nor as base64 of text.
    const lastKey = first!.Contents!.at(-1)!.Key!;
    expect(first!.NextContinuationToken).not.toContain(lastKey);
    expect(Buffer.from(first!.NextContinuationToken!, 'base64').toString('latin1')).not.toContain(lastKey);
  });

  it('never answers more than 1,000 keys, whatever MaxKeys asks', async () => {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: 'many/', MaxKeys: 5000 }));
    expect([page.KeyCount, page.Contents?.length, page.IsTruncated]).toEqual([1000, 1000, true]);
    expect(page.NextContinuationToken).toEqual(expect.any(String));
  });

  it('lists in UTF-8 binary order across small pages, skipping no key', async () => {
    const pages = await allPages({ Bucket: LOCAL_BUCKET, Prefix: 'order/' }, 2);
    expect(pages.map((page) => page.KeyCount)).toEqual([2, 2, 2, 2]);
    expect(pages.map((page) => page.IsTruncated)).toEqual([true, true, true, false]);
    expect(pages.flatMap((page) => page.Contents!.map((object) => object.Key))).toEqual(ORDERED);
    expect(utf8Sorted(ORDERED)).toEqual(ORDERED);
  });

  it('starts after StartAfter, and says so', async () => {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: 'order/', StartAfter: 'order/a-b' }));
    expect(page.StartAfter).toBe('order/a-b');
    expect(page.Contents!.map((object) => object.Key)).toEqual(ORDERED.slice(2));
    expect(page.IsTruncated).toBe(false);
  });

  it('counts a common prefix as one entry of a page and continues past it', async () => {
    const pages = await allPages({ Bucket: LOCAL_BUCKET, Prefix: 'tree/', Delimiter: '/' }, 2);
    expect(
      pages.map((page) => ({
        keys: (page.Contents ?? []).map((object) => object.Key),
        prefixes: (page.CommonPrefixes ?? []).map((prefix) => prefix.Prefix),
        count: page.KeyCount,
        truncated: page.IsTruncated,
      })),
    ).toEqual([
      { keys: ['tree/b'], prefixes: ['tree/a/'], count: 2, truncated: true },
      { keys: ['tree/d'], prefixes: ['tree/c/'], count: 2, truncated: false },
    ]);
  });

  it('answers MaxKeys 0 with no key and no truncation', async () => {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: 'many/', MaxKeys: 0 }));
    expect([page.KeyCount, page.Contents, page.IsTruncated, page.NextContinuationToken]).toEqual([0, undefined, false, undefined]);
  });

  it('refuses a continuation token it did not hand out, an altered one, and one of another bucket', async () => {
    const incorrect = { name: 'InvalidArgument', status: 400, message: 'The continuation token provided is incorrect' };
    const page = await s3.send(new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: 'many/', MaxKeys: 1 }));
    const token = page.NextContinuationToken!;
    // The token works as handed out.
    const next = await s3.send(new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: 'many/', MaxKeys: 1, ContinuationToken: token }));
    expect(next.Contents!.map((object) => object.Key)).toEqual([utf8Sorted(manyKeys)[1]]);

    const made = Buffer.from(`${LOCAL_BUCKET}/many/5.json`).toString('base64');
    expect(await refusal({ Bucket: LOCAL_BUCKET, ContinuationToken: made })).toEqual(incorrect);
    expect(await refusal({ Bucket: LOCAL_BUCKET, ContinuationToken: 'not a token' })).toEqual(incorrect);
    const flipped = Buffer.from(token, 'base64');
    flipped[flipped.length - 1]! ^= 1;
    expect(await refusal({ Bucket: LOCAL_BUCKET, ContinuationToken: flipped.toString('base64') })).toEqual(incorrect);
    expect(await refusal({ Bucket: 'other-bucket', Prefix: 'many/', ContinuationToken: token })).toEqual(incorrect);
  });

  it('refuses a MaxKeys that is no whole number from 0, as S3 does', async () => {
    expect(await refusal({ Bucket: LOCAL_BUCKET, MaxKeys: -1 })).toMatchObject({ name: 'InvalidArgument', status: 400 });
  });
});
