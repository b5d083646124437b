import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * Checks AWS Signature Version 4 on a request, as the real services do before anything else, so that a function
 * can only act as the principal whose secret it holds.
 */
export interface SignedRequest {
  method: string;
  /** The path and query as sent on the wire. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface Signature {
  accessKeyId: string;
  /** yyyymmdd/region/service/aws4_request */
  scope: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

/** AWS refuses a request whose signing time is more than 15 minutes away from its own clock. */
const MAX_CLOCK_SKEW_MS = 15 * 60_000;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const timeOf = (amzDate: string) => (AMZ_DATE.test(amzDate) ? Date.parse(amzDate.replace(AMZ_DATE, '$1-$2-$3T$4:$5:$6Z')) : Number.NaN);
const AUTHORIZATION = new RegExp(
  String.raw`^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8}/[^/,\s]+/([^/,\s]+)/aws4_request), ` +
    String.raw`?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$`,
);

export function parseAuthorization(headers: IncomingHttpHeaders): Signature | undefined {
  const match = AUTHORIZATION.exec(String(headers.authorization ?? ''));
  if (!match) return undefined;
  return { accessKeyId: match[1]!, scope: match[2]!, service: match[3]!, signedHeaders: match[4]!.split(';'), signature: match[5]! };
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
const escapeUri = (value: string) => encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function canonicalQuery(query: string): string {
  if (!query) return '';
  return query
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf('=');
      const [key, value] = at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)];
      return `${escapeUri(decode(key))}=${escapeUri(decode(value))}`;
    })
    .sort()
    .join('&');
}

/** S3 signs the path as sent; the other services sign it escaped once more. */
function canonicalPath(path: string, service: string): string {
  if (service === 's3') return path || '/';
  return (path || '/').split('/').map(escapeUri).join('/');
}

function headerValue(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return (Array.isArray(value) ? value.join(',') : (value ?? '')).trim().replace(/\s+/g, ' ');
}

export type SignatureCheck = 'valid' | 'mismatch' | 'expired';

export function checkSignature(request: SignedRequest, signature: Signature, secretAccessKey: string, now = Date.now()): SignatureCheck {
  const amzDate = headerValue(request.headers, 'x-amz-date');
  const signedAt = timeOf(amzDate);
  // The scope's day must be the signing time's day, as AWS checks before the signature itself.
  if (!Number.isFinite(signedAt) || !signature.signedHeaders.includes('host') || !signature.scope.startsWith(`${amzDate.slice(0, 8)}/`))
    return 'mismatch';
  if (Math.abs(now - signedAt) > MAX_CLOCK_SKEW_MS) return 'expired';
  const queryAt = request.url.indexOf('?');
  const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt);
  const query = queryAt < 0 ? '' : request.url.slice(queryAt + 1);
  const declaredHash = headerValue(request.headers, 'x-amz-content-sha256');
  const bodyHash = sha256(request.body);
  // S3 checks a declared hash against the body it received (other values say the payload is unsigned or chunked).
  if (/^[0-9a-f]{64}$/.test(declaredHash) && declaredHash !== bodyHash) return 'mismatch';
  const payloadHash = declaredHash || bodyHash;
  return signatureMatches(signature, amzDate, canonicalRequestOf(request, signature, path, query, payloadHash), secretAccessKey)
    ? 'valid'
    : 'mismatch';
}

/** A presigned URL's signature (query-string authentication), as `@aws-sdk/s3-request-presigner` makes it. */
export interface QuerySignature extends Signature {
  amzDate: string;
  expiresSeconds: number;
}

/** What a URL's query says about its authentication: a signature to check, or S3's reason to refuse it unchecked. */
export type QueryAuthorization = { signature: QuerySignature } | { malformed: string };

/** S3 refuses a presigned URL valid for more than 7 days. */
const MAX_PRESIGNED_EXPIRY_SECONDS = 604_800;
const QUERY_AUTH_PARAMS = [
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
  'X-Amz-Security-Token',
  'X-Amz-Content-Sha256',
];
const REQUIRED_QUERY_PARAMS = ['X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature'];

/** Reads query-string authentication with S3's own checks (and messages) on its parameters; undefined when there is none. */
export function parseQueryAuthorization(url: string): QueryAuthorization | undefined {
  const query = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  if (!['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Signature'].some((name) => query.has(name))) return undefined;
  if (query.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return { malformed: 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"' };
  if (REQUIRED_QUERY_PARAMS.some((name) => !query.get(name))) {
    return {
      malformed:
        'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, ' +
        'X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
    };
  }
  const credential = /^([^/]+)\/((\d{8})\/[^/]+\/([^/]+)\/aws4_request)$/.exec(query.get('X-Amz-Credential')!);
  if (!credential)
    return {
      malformed:
        'Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting ' +
        '"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
    };
  const amzDate = query.get('X-Amz-Date')!;
  if (!Number.isFinite(timeOf(amzDate))) return { malformed: "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"" };
  if (amzDate.slice(0, 8) !== credential[3]) return { malformed: 'Invalid credential date. Date is not the same as X-Amz-Date.' };
  const expiresText = query.get('X-Amz-Expires')!;
  if (!/^-?\d+$/.test(expiresText)) return { malformed: 'X-Amz-Expires should be a number' };
  const expires = Number(expiresText);
  if (expires < 0) return { malformed: 'X-Amz-Expires must be non-negative' };
  if (expires > MAX_PRESIGNED_EXPIRY_SECONDS)
    return { malformed: `X-Amz-Expires must be less than a week (in seconds) that is; ${MAX_PRESIGNED_EXPIRY_SECONDS}` };
  return {
    signature: {
      accessKeyId: credential[1]!,
      scope: credential[2]!,
      service: credential[4]!,
      signedHeaders: query.get('X-Amz-SignedHeaders')!.split(';'),
      signature: query.get('X-Amz-Signature')!,
      amzDate,
      expiresSeconds: expires,
    },
  };
}

/** The URL without its authentication parameters: what the stand-in behind the front door is asked for. */
export function withoutQueryAuthorization(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const kept = url
    .slice(at + 1)
    .split('&')
    .filter((pair) => pair && !QUERY_AUTH_PARAMS.includes(decode(pair.split('=')[0]!)));
  return kept.length > 0 ? `${url.slice(0, at)}?${kept.join('&')}` : url.slice(0, at);
}

/**
 * Checks a presigned URL: its signature over the request (the payload as the URL declares it, `UNSIGNED-PAYLOAD`
 * unless it names a hash, which the body must then have), and then that it has not expired.
 */
export function checkQuerySignature(
  request: SignedRequest,
  signature: QuerySignature,
  secretAccessKey: string,
  now = Date.now(),
): SignatureCheck {
  const signedAt = timeOf(signature.amzDate);
  if (!Number.isFinite(signedAt) || !signature.signedHeaders.includes('host')) return 'mismatch';
  const queryAt = request.url.indexOf('?');
  const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt);
  const query = (queryAt < 0 ? '' : request.url.slice(queryAt + 1))
    .split('&')
    .filter((pair) => pair && decode(pair.split('=')[0]!) !== 'X-Amz-Signature')
    .join('&');
  const payloadHash = new URLSearchParams(query).get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD';
  if (/^[0-9a-f]{64}$/.test(payloadHash) && payloadHash !== sha256(request.body)) return 'mismatch';
  if (!signatureMatches(signature, signature.amzDate, canonicalRequestOf(request, signature, path, query, payloadHash), secretAccessKey))
    return 'mismatch';
  if (now > signedAt + signature.expiresSeconds * 1000 || signedAt - now > MAX_CLOCK_SKEW_MS) return 'expired';
  return 'valid';
}

/** SigV4's canonical request: the same for header and query authentication, but for the query and the payload hash. */
function canonicalRequestOf(request: SignedRequest, signature: Signature, path: string, query: string, payloadHash: string): string {
  return [
    request.method,
    canonicalPath(path, signature.service),
    canonicalQuery(query),
    ...signature.signedHeaders.map((name) => `${name}:${headerValue(request.headers, name)}`),
    '',
    signature.signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
}

/**
 * Derived signing keys by secret and scope: the key depends on nothing else, so it is derived once a day per caller
 * and service, as the SDKs' signers cache it too, not with four HMACs on every request.
 */
const signingKeys = new Map<string, Buffer>();
const MAX_SIGNING_KEYS = 1000;

function signingKeyOf(secretAccessKey: string, scope: string): Buffer {
  const cacheKey = `${secretAccessKey}\n${scope}`;
  let key = signingKeys.get(cacheKey);
  if (!key) {
    const [day, region, service] = scope.split('/') as [string, string, string];
    key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), service), 'aws4_request');
    if (signingKeys.size >= MAX_SIGNING_KEYS) signingKeys.clear();
    signingKeys.set(cacheKey, key);
  }
  return key;
}

function signatureMatches(signature: Signature, amzDate: string, canonicalRequest: string, secretAccessKey: string): boolean {
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, signature.scope, sha256(canonicalRequest)].join('\n');
  const signingKey = signingKeyOf(secretAccessKey, signature.scope);
  const given = /^[0-9a-f]{64}$/.test(signature.signature) ? Buffer.from(signature.signature, 'hex') : Buffer.alloc(0);
  const expected = hmac(signingKey, stringToSign);
  return given.length === expected.length && timingSafeEqual(expected, given);
}
