import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gunzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { routeById } from '#functions/routes.ts';
import {
  acceptsGzip,
  REFERENCE_PAGE_CSP,
  referencePageHtml,
  referencePageResponse,
  referenceScriptResponse,
  type ApiReference,
} from '#shared/http/api-reference/api-reference.ts';
import { redocScript } from '#shared/http/api-reference/redoc-script.ts';
import { prepareRedocScript, REDOC_STANDALONE_MODULE } from '#shared/http/api-reference/redoc-standalone.ts';

const published: ApiReference = {
  title: 'Published Workflow API',
  pagePath: routeById('PublishedDocs').path,
  documentPath: routeById('PublishedOpenApi31').path,
  scriptPath: routeById('PublishedDocsScript').path,
};
const webhooks: ApiReference = {
  title: 'Inbound Conversation Webhook API',
  pagePath: routeById('WebhookDocs').path,
  documentPath: routeById('WebhookOpenApi31').path,
  scriptPath: routeById('WebhookDocsScript').path,
};

const request = (headers: Record<string, string> = {}, query: Record<string, string> | null = null) =>
  ({ headers, queryStringParameters: query }) as unknown as APIGatewayProxyEvent;

/** The URLs a page names: its document (Redoc's spec-url) and its script. */
function namedUrls(html: string) {
  return { document: /<redoc spec-url="([^"]+)"/.exec(html)![1]!, script: /<script src="([^"]+)"/.exec(html)![1]! };
}

describe('an API reference page', () => {
  it.each([
    ['published', published],
    ['webhooks', webhooks],
  ])('names the %s 3.1 document and its script relative to itself, which resolve under any stage or base path', (_name, reference) => {
    const { document, script } = namedUrls(referencePageHtml(reference, redocScript));

    for (const mount of [
      'http://127.0.0.1:3000',
      'https://abc.execute-api.eu-west-1.amazonaws.com/prod',
      'https://api.example.com/workflows',
    ]) {
      const page = new URL(`${mount}${reference.pagePath}`);
      expect(new URL(document, page).href).toBe(`${mount}${reference.documentPath}`);
      const scriptUrl = new URL(script, page);
      expect(scriptUrl.origin + scriptUrl.pathname).toBe(`${mount}${reference.scriptPath}`);
      expect(scriptUrl.searchParams.get('v')).toBe(redocScript.version);
    }
    expect(document).toMatch(/openapi-3\.1\.json$/);
  });

  it('has no inline script: the script it loads is the only one, so the policy allows scripts from the API alone', () => {
    const html = referencePageHtml(published, redocScript);

    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).not.toMatch(/<script>|\son\w+=/);
  });

  it('is answered as HTML with a policy that allows no other origin', () => {
    const response = referencePageResponse(published, redocScript);
    const directives: Record<string, string[]> = Object.fromEntries(
      REFERENCE_PAGE_CSP.split('; ').map((directive) => {
        const [name, ...sources] = directive.split(' ');
        return [name, sources];
      }),
    );

    expect(response.statusCode).toBe(200);
    expect(response.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': REFERENCE_PAGE_CSP,
      'x-content-type-options': 'nosniff',
    });
    expect(directives['default-src']).toEqual(["'none'"]);
    expect(directives['script-src']).toEqual(["'self'"]);
    expect(directives['connect-src']).toEqual(["'self'"]);
    // Every source is the API itself, none, inline styles, or what the page makes (data: icons, the blob: worker).
    for (const sources of Object.values(directives))
      for (const source of sources) expect(["'self'", "'none'", "'unsafe-inline'", 'data:', 'blob:']).toContain(source);
  });
});

describe("the reference page's script", () => {
  const installed = readFileSync(createRequire(import.meta.url).resolve(REDOC_STANDALONE_MODULE));
  const served = gunzipSync(redocScript.gzip).toString('utf8');

  it('is the installed Redoc without the one address it would load from another host', () => {
    expect(installed.toString('utf8')).toContain('https://cdn.redoc.ly/redoc/logo-mini.svg');
    expect(served).not.toContain('cdn.redoc.ly');
    expect(served).toBe(installed.toString('utf8').replace('"https://cdn.redoc.ly/redoc/logo-mini.svg"', '"data:,"'));
    expect(served).toContain('const Yw="2.5.3"');
  });

  it('refuses a Redoc that no longer has the address to take out, rather than serve it unchecked', () => {
    expect(() => prepareRedocScript(Buffer.from('console.log("another Redoc")'))).toThrow(/names its CDN logo 0 times/);
  });

  it('takes gzip by name or *, unless its quality is 0', () => {
    expect(acceptsGzip(request({ 'Accept-Encoding': 'gzip, deflate, br, zstd' }))).toBe(true);
    expect(acceptsGzip(request({ 'accept-encoding': 'br;q=1.0, gzip;q=0.5' }))).toBe(true);
    expect(acceptsGzip(request({ 'accept-encoding': '*' }))).toBe(true);
    expect(acceptsGzip(request({ 'accept-encoding': 'gzip;q=0, br' }))).toBe(false);
    expect(acceptsGzip(request({ 'accept-encoding': 'identity' }))).toBe(false);
    expect(acceptsGzip(request())).toBe(false);
  });

  it('is sent gzipped to a client that takes it, else as text, varying on Accept-Encoding', () => {
    const gzipped = referenceScriptResponse(request({ 'accept-encoding': 'gzip' }), redocScript);
    const plain = referenceScriptResponse(request(), redocScript);

    expect(gzipped).toMatchObject({
      statusCode: 200,
      isBase64Encoded: true,
      headers: { 'content-type': 'text/javascript; charset=utf-8', 'content-encoding': 'gzip', vary: 'Accept-Encoding' },
    });
    expect(gunzipSync(Buffer.from(gzipped.body, 'base64')).toString('utf8')).toBe(served);
    expect(plain.headers?.['content-encoding']).toBeUndefined();
    expect(plain.isBase64Encoded).toBeFalsy();
    expect(plain.body).toBe(served);
    expect(referenceScriptResponse(request(), redocScript, ['Origin']).headers?.vary).toBe('Origin, Accept-Encoding');
  });

  it('may be kept for a year under the version the page names, and is revalidated under any other', () => {
    const named = referenceScriptResponse(request({}, { v: redocScript.version }), redocScript);
    const other = referenceScriptResponse(request({}, { v: 'an-older-version' }), redocScript);
    const bare = referenceScriptResponse(request(), redocScript);

    expect(named.headers?.['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(other.headers?.['cache-control']).toBe('no-cache');
    expect(bare.headers?.['cache-control']).toBe('no-cache');
    expect(other.body).toBe(named.body);
  });
});
