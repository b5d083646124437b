import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * One page of ListObjectsV2 as S3 answers it (docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html): keys in
 * UTF-8 binary order, at most 1,000 entries a page whatever MaxKeys asks, a key and a common prefix each counting as
 * one entry (KeyCount), and an opaque continuation token that only this store's own pages hand out.
 */
const MAX_KEYS_PER_PAGE = 1000;

/** Where a page ended: after this key, or after every key under this common prefix. */
export interface ListPosition {
  after: string;
  rolledUp: boolean;
}

export interface ListRequest {
  prefix: string;
  delimiter: string;
  /** From a continuation token, else from StartAfter. */
  position?: ListPosition;
  maxKeys: number;
}

export interface ListPage {
  keys: string[];
  commonPrefixes: string[];
  truncated: boolean;
  /** Set when truncated: where the next page starts. */
  next?: ListPosition;
}

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/** UTF-8 binary order, S3's: JavaScript's own comparison orders UTF-16 code units, which differs past U+FFFF. */
function compareKeys(a: string, b: string): number {
  return Buffer.compare(utf8(a), utf8(b));
}

/** The page `request` asks for out of `keys` (every key of the bucket, or at least every one under the prefix). */
export function listPage(keys: readonly string[], request: ListRequest): ListPage {
  const sorted = keys.filter((key) => key.startsWith(request.prefix)).sort(compareKeys);
  const { position } = request;
  const page: ListPage = { keys: [], commonPrefixes: [], truncated: false };
  let last: ListPosition | undefined;
  for (const key of sorted) {
    if (position && (compareKeys(key, position.after) <= 0 || (position.rolledUp && key.startsWith(position.after)))) continue;
    const cut = request.delimiter ? key.indexOf(request.delimiter, request.prefix.length) : -1;
    const entry: ListPosition =
      cut === -1 ? { after: key, rolledUp: false } : { after: key.slice(0, cut + request.delimiter.length), rolledUp: true };
    if (last?.rolledUp && entry.rolledUp && entry.after === last.after) continue;
    if (page.keys.length + page.commonPrefixes.length >= Math.min(request.maxKeys, MAX_KEYS_PER_PAGE)) {
      // S3 answers an empty, untruncated page to MaxKeys 0.
      if (request.maxKeys > 0) page.truncated = true;
      break;
    }
    (entry.rolledUp ? page.commonPrefixes : page.keys).push(entry.after);
    last = entry;
  }
  if (page.truncated) page.next = last;
  return page;
}

/*
 * The token is sealed (AES-256-GCM), so a client can neither read a key out of it nor make one up: S3's tokens are
 * opaque, and a made-up or altered one is refused. The key is fixed, so a token still works after the twin restarts.
 */
const TOKEN_KEY = createHash('sha256').update('twin s3 continuation token').digest();
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function sealToken(bucket: string, position: ListPosition): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', TOKEN_KEY, iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify({ bucket, ...position }), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
}

/** The position a token of this bucket's listing holds, or undefined for anything else. */
export function openToken(bucket: string, token: string): ListPosition | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(token)) return undefined;
  const bytes = Buffer.from(token, 'base64');
  if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', TOKEN_KEY, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    const opened = JSON.parse(text) as { bucket?: unknown; after?: unknown; rolledUp?: unknown };
    if (opened.bucket !== bucket || typeof opened.after !== 'string' || typeof opened.rolledUp !== 'boolean') return undefined;
    return { after: opened.after, rolledUp: opened.rolledUp };
  } catch {
    return undefined;
  }
}
