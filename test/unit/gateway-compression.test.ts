import { gunzipSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { API_GATEWAY_HEADER_BYTES, bufferedResponseBytes } from '#shared/metering/data-transfer-meter.ts';
import { asSentByGateway, gatewayCoding, MINIMUM_COMPRESSION_BYTES } from '#shared/http/gateway-compression.ts';

/**
 * API Gateway's payload compression as the AWS documentation states it: the codings it has are gzip, deflate and
 * identity, it reads the Accept-Encoding forms of RFC 7231 and compresses only when the highest-priority coding is
 * one it has (docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-enable-compression.html), never
 * without the header or a body below minimumCompressionSize, and never a body that already names its
 * Content-Encoding (docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-receive-response-with-compressed-payload.html).
 */

const json = (bytes: number) => JSON.stringify({ text: 'x'.repeat(bytes - 11) });

describe('the coding API Gateway answers an Accept-Encoding with', () => {
  it('reads the forms the AWS documentation lists', () => {
    expect(gatewayCoding('deflate,gzip')).toBe('deflate');
    expect(gatewayCoding('')).toBeUndefined();
    expect(gatewayCoding('*')).toBeUndefined();
    expect(gatewayCoding('deflate;q=0.5,gzip;q=1.0')).toBe('gzip');
    expect(gatewayCoding('gzip;q=1.0,identity;q=0.5,*;q=0')).toBe('gzip');
  });

  it('compresses for no request without the header, and for none whose first choice it lacks', () => {
    expect(gatewayCoding(undefined)).toBeUndefined();
    expect(gatewayCoding('identity')).toBeUndefined();
    expect(gatewayCoding('br, gzip')).toBeUndefined();
    expect(gatewayCoding('gzip;q=0.8, identity')).toBeUndefined();
    expect(gatewayCoding('gzip;q=0')).toBeUndefined();
  });

  it("takes a browser's list, any case, and skips an entry whose quality is not a qvalue", () => {
    expect(gatewayCoding('gzip, deflate, br, zstd')).toBe('gzip');
    expect(gatewayCoding('br;q=0.9, GZIP')).toBe('gzip');
    expect(gatewayCoding('br;q=2, deflate;Q=0.3')).toBe('deflate');
  });
});

describe('a buffered answer as API Gateway sends it', () => {
  const response = (body: string, headers: Record<string, string> = {}) => ({
    statusCode: 200,
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

  it('is compressed from the minimum size on, never below it', () => {
    const below = response(json(MINIMUM_COMPRESSION_BYTES - 1));
    const at = response(json(MINIMUM_COMPRESSION_BYTES));

    expect(asSentByGateway(below, 'gzip')).toBe(below);
    const sent = asSentByGateway(at, 'gzip');
    expect(sent.headers).toEqual({ 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(sent.isBase64Encoded).toBe(true);
    expect(gunzipSync(Buffer.from(sent.body, 'base64')).toString('utf8')).toBe(at.body);
  });

  it('is deflate-encoded (zlib) for deflate, and untouched without a coding the gateway has', () => {
    const body = json(4096);
    const sent = asSentByGateway(response(body), 'deflate');

    expect(sent.headers?.['content-encoding']).toBe('deflate');
    expect(inflateSync(Buffer.from(sent.body, 'base64')).toString('utf8')).toBe(body);
    expect(asSentByGateway(response(body), 'br')).toEqual(response(body));
    expect(asSentByGateway(response(body), undefined)).toEqual(response(body));
  });

  it('is left as it is when the function named its own Content-Encoding, in any case', () => {
    const own = response(json(4096), { 'Content-Encoding': 'identity' });
    expect(asSentByGateway(own, 'gzip')).toBe(own);
  });

  it('measures a base64 body by its bytes, not its text', () => {
    const bytes = Buffer.alloc(900, 7);
    const binary = { statusCode: 200, headers: {}, body: bytes.toString('base64'), isBase64Encoded: true };
    // 1,200 characters of base64, 900 bytes: below the minimum.
    expect(asSentByGateway(binary, 'gzip')).toBe(binary);
  });

  it("is what the data transfer meter counts: the Content-Encoding line and the compressed length, not the function's body", () => {
    const plain = response(json(8192));
    const sent = asSentByGateway(plain, 'gzip');
    const compressed = Buffer.from(sent.body, 'base64').byteLength;
    const head = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\nContent-Length: ${compressed}\r\n`;

    expect(bufferedResponseBytes(sent)).toBe(Buffer.byteLength(head) + API_GATEWAY_HEADER_BYTES + 2 + compressed);
    expect(bufferedResponseBytes(sent)).toBeLessThan(bufferedResponseBytes(plain) / 10);
  });
});
