import { deflateSync, gzipSync } from 'node:zlib';
import type { APIGatewayProxyResult } from 'aws-lambda';

/*
 * API Gateway's payload compression (a REST API's `minimumCompressionSize`), as the AWS documentation states it
 * (docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-receive-response-with-compressed-payload.html and
 * .../api-gateway-enable-compression.html): a buffered response is compressed when the request's `Accept-Encoding`
 * puts a coding API Gateway has (gzip or deflate) first, the integration's response has no `Content-Encoding`, and its
 * payload is at least the minimum size. A streamed response never is (.../response-transfer-mode.html). CDK sets the
 * minimum (lib/cdk/constructs/api.ts), the twin compresses as the gateway does (lib/twin/http-server.ts), and the
 * data transfer meter counts the compressed bytes (functions/shared/metering/data-transfer-meter.ts).
 */

/** The API's `minimumCompressionSize`: smaller bodies gain little and may grow; the OpenAPI documents (83 KB) shrink to an eighth. */
export const MINIMUM_COMPRESSION_BYTES = 1024;

/** The codings API Gateway compresses with (besides `identity`, which is no compression). */
export type GatewayCoding = 'gzip' | 'deflate';

/** An RFC 9110 qvalue: 0 to 1 with at most three decimals. Anything else makes its entry unreadable. */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/**
 * The coding API Gateway answers a request's `Accept-Encoding` with: the highest-priority coding (the highest quality;
 * between equals, the first listed), when it is gzip or deflate. No header, `*` or `identity` first, or an unsupported
 * coding first (`br`) get no compression: AWS compresses only when the highest-priority coding is one it supports.
 */
export function gatewayCoding(acceptEncoding: string | undefined): GatewayCoding | undefined {
  let best: { coding: string; quality: number } | undefined;
  for (const entry of (acceptEncoding ?? '').split(',')) {
    const [name = '', ...parameters] = entry.split(';').map((part) => part.trim());
    if (name === '') continue;
    const q = parameters.find((parameter) => /^q=/i.test(parameter))?.slice(2);
    if (q !== undefined && !QVALUE.test(q)) continue;
    const quality = q === undefined ? 1 : Number(q);
    if (quality > 0 && (!best || quality > best.quality)) best = { coding: name.toLowerCase(), quality };
  }
  return best?.coding === 'gzip' || best?.coding === 'deflate' ? best.coding : undefined;
}

const hasHeader = (response: APIGatewayProxyResult, name: string) =>
  [...Object.keys(response.headers ?? {}), ...Object.keys(response.multiValueHeaders ?? {})].some((key) => key.toLowerCase() === name);

/** The payload's bytes, as the gateway sends them uncompressed. */
const payloadOf = (response: APIGatewayProxyResult) =>
  response.isBase64Encoded ? Buffer.from(response.body ?? '', 'base64') : Buffer.from(response.body ?? '', 'utf8');

/**
 * A buffered Lambda proxy response as API Gateway sends it to a request that said `acceptEncoding`: unchanged, or its
 * payload compressed (as base64, `isBase64Encoded`) with `content-encoding` naming the coding. The size the gateway
 * then frames it with (`Content-Length`) is the compressed payload's. The level is zlib's default: API Gateway does
 * not document its own, so on AWS the compressed size is close to, not exactly, this one.
 */
export function asSentByGateway(
  response: APIGatewayProxyResult,
  acceptEncoding: string | undefined,
  minimumBytes: number = MINIMUM_COMPRESSION_BYTES,
): APIGatewayProxyResult {
  const coding = gatewayCoding(acceptEncoding);
  if (!coding || hasHeader(response, 'content-encoding')) return response;
  const payload = payloadOf(response);
  if (payload.byteLength < minimumBytes) return response;
  const compressed = coding === 'gzip' ? gzipSync(payload) : deflateSync(payload);
  return {
    ...response,
    headers: { ...response.headers, 'content-encoding': coding },
    body: compressed.toString('base64'),
    isBase64Encoded: true,
  };
}
