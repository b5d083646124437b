import { STATUS_CODES } from 'node:http';

/**
 * What an API response costs in data transfer out to the internet (billed per GB): the bytes the client receives for
 * it, counted as the HTTP/1.1 message API Gateway sends:
 *
 * - the status line, `HTTP/1.1 200 OK` and its CRLF;
 * - each header the function answers with, the route's CORS headers included, as `name: value` and CRLF (a
 *   multi-value header one line per value; a name in both `headers` and `multiValueHeaders` once, as the latter);
 * - the framing header, exact: `Content-Length: <n>` for a buffered response, `Transfer-Encoding: chunked` for a
 *   streamed one;
 * - the headers API Gateway adds on its own, which no function sees: estimated, API_GATEWAY_HEADER_BYTES;
 * - the blank line, then every byte of the body (for a stream, every byte the function wrote to it).
 *
 * A buffered body counts as API Gateway sends it: compressed, with its `Content-Encoding` line and the compressed
 * length, when the request accepts gzip or deflate and the body reaches the API's minimum compression size
 * (functions/shared/http/gateway-compression.ts); the HTTP stack hands the meter that form (`asSentByGateway`). The
 * gateway compresses after the function returns, so the function compresses a copy itself to learn the size: the
 * same bytes the twin sends, and close to AWS's (whose compression level is undocumented). Counting the body as
 * returned would count a large JSON answer at several times what the caller receives (an OpenAPI document at eight
 * times). A streamed body is never compressed by the gateway, and counts as written.
 *
 * Not counted: the chunk-size lines of a streamed body (a few bytes per chunk, and API Gateway's chunking is its own),
 * TLS records and TCP/IP headers (a few per cent on AWS's meter). An HTTP/2 client gets the headers HPACK-compressed,
 * fewer bytes than counted here.
 */

/**
 * The headers a REST API (REGIONAL endpoint, stage tracing off) adds to every Lambda proxy answer, as sent, each with
 * its CRLF: `Date: Thu, 26 Nov 2026 12:00:00 GMT` (37), `Connection: keep-alive` (24), `x-amzn-RequestId: <uuid>`
 * (56), `x-amz-apigw-id: <16 characters>` (34) and `X-Amzn-Trace-Id: Root=1-<8 hex>-<24 hex>;Sampled=0;Lineage=1:<8
 * hex>:0` (90). An estimate: the twin's server adds its own (Date, Connection, Keep-Alive) instead.
 */
export const API_GATEWAY_HEADER_BYTES = 37 + 24 + 56 + 34 + 90;

/** The status and headers of a response, as a Lambda proxy result or a streamed response's prelude has them. */
export interface ResponseHead {
  statusCode: number;
  headers?: Record<string, unknown>;
  multiValueHeaders?: Record<string, unknown[]>;
}

/** A body as a Lambda proxy result carries it: text, or base64 when `isBase64Encoded`. */
export interface ResponseBody {
  body?: string | null;
  isBase64Encoded?: boolean;
}

const CRLF = 2;

/** The head's bytes: status line, the function's headers, the framing header, API Gateway's own, the blank line. */
function responseHeadBytes(head: ResponseHead, framing: { contentLength: number } | 'chunked'): number {
  const status = `HTTP/1.1 ${head.statusCode} ${STATUS_CODES[head.statusCode] ?? 'unknown'}`;
  let bytes = Buffer.byteLength(status, 'latin1') + CRLF;
  const line = (name: string, value: unknown) => Buffer.byteLength(`${name}: ${String(value)}`, 'latin1') + CRLF;
  const multi = head.multiValueHeaders ?? {};
  for (const [name, value] of Object.entries(head.headers ?? {})) if (!Object.hasOwn(multi, name)) bytes += line(name, value);
  for (const [name, values] of Object.entries(multi)) for (const value of values) bytes += line(name, value);
  bytes += framing === 'chunked' ? line('Transfer-Encoding', 'chunked') : line('Content-Length', framing.contentLength);
  return bytes + API_GATEWAY_HEADER_BYTES + CRLF;
}

/** The body's bytes as the client receives them. */
export function responseBodyBytes(response: ResponseBody): number {
  if (!response.body) return 0;
  return response.isBase64Encoded ? Buffer.from(response.body, 'base64').byteLength : Buffer.byteLength(response.body, 'utf8');
}

/** A buffered response, whole: its head (with `Content-Length`) and its body. */
export function bufferedResponseBytes(response: ResponseHead & ResponseBody): number {
  const body = responseBodyBytes(response);
  return responseHeadBytes(response, { contentLength: body }) + body;
}

/** A streamed response's head (`Transfer-Encoding: chunked`): what goes out when the stream opens. */
export function streamedHeadBytes(head: ResponseHead): number {
  return responseHeadBytes(head, 'chunked');
}

/** A chunk written to a response stream. */
export function chunkBytes(chunk: string | Uint8Array): number {
  return typeof chunk === 'string' ? Buffer.byteLength(chunk, 'utf8') : chunk.byteLength;
}

/**
 * Response bytes that could not be recorded with the invocation that sent them, for the next invocation of the same
 * function instance (usage-settlement.ts): a webhook request's usage rides on its limits update, written before its
 * answer exists, and a usage write of its own for a few hundred bytes would cost more than they do. Lambda runs one
 * invocation at a time per instance, so each request records the bytes of the answer before it; only the last answer
 * of each instance is left out.
 */
let dataTransferForNext = 0;

/** Leaves `bytes` for the next invocation of this instance. */
export function leaveDataTransferForNext(bytes: number): void {
  dataTransferForNext += bytes;
}

/** What earlier invocations left for this one (and nothing for the one after). */
export function takeDataTransferLeftBefore(): number {
  const bytes = dataTransferForNext;
  dataTransferForNext = 0;
  return bytes;
}
