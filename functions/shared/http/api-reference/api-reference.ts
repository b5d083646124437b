import { posix } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { header, type HttpRequest, type HttpResponse } from '../http-stack.ts';
import { routedPath } from '../gateway-event.ts';
import type { RedocScript } from './redoc-standalone.ts';

/*
 * An API's reference page: Redoc rendering the API's OpenAPI 3.1 document (Redoc 2.x does not read 3.2's
 * `itemSchema`), every byte of it from the API itself. The page names the document and the script by URLs relative to
 * itself, so it works under any host, stage and custom domain base path; its Content-Security-Policy lets it load
 * nothing from anywhere else, whatever a document or a future Redoc asks for.
 */

/** Where an API's reference page, its OpenAPI document and the script live: paths of the route table. */
export interface ApiReference {
  /** The API's name, the page's title. */
  readonly title: string;
  readonly pagePath: string;
  readonly documentPath: string;
  readonly scriptPath: string;
}

/**
 * Only the API's own origin. Redoc styles with <style> elements it writes (styled-components) and `style` attributes,
 * and runs its search index in a worker made from a blob; its icons are inline SVG. Nothing else is allowed.
 */
export const REFERENCE_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** A year: the script's URL names its content, so a copy never goes stale. */
const SCRIPT_MAX_AGE_SECONDS = 365 * 24 * 60 * 60;

/** A URL of `target` that a page at `page` resolves to it, wherever the API is mounted. */
function relativeUrl(page: string, target: string): string {
  return posix.relative(posix.dirname(page), target);
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/**
 * Redoc's options as attributes of its element, which its script reads when it loads: the document's URL, and the
 * success answers opened, so a stream's events are in sight without a click.
 */
export function referencePageHtml(reference: ApiReference, script: RedocScript): string {
  const document = escapeHtml(relativeUrl(reference.pagePath, reference.documentPath));
  const scriptUrl = escapeHtml(`${relativeUrl(reference.pagePath, reference.scriptPath)}?v=${script.version}`);
  const title = escapeHtml(`${reference.title}: reference`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>body { margin: 0; }</style>
</head>
<body>
<noscript>This reference needs JavaScript. The API's OpenAPI document: <a href="${document}">${document}</a></noscript>
<redoc spec-url="${document}" expand-responses="200,201" required-props-first="true"></redoc>
<script src="${scriptUrl}"></script>
</body>
</html>
`;
}

/** The page's answer, the same for every request: revalidated each time, as it names the current script. */
export function referencePageResponse(reference: ApiReference, script: RedocScript): HttpResponse {
  return {
    statusCode: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': REFERENCE_PAGE_CSP,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    },
    body: referencePageHtml(reference, script),
  };
}

/**
 * The page's answer to `request`. API Gateway routes `<page>/` to the page's method as well, its `path` keeping the
 * slash; there the page's relative URLs would resolve under `<page>/` and reach nothing, so that address is sent on to
 * the page's own (301, by a relative Location: it works under any host, stage and base path).
 */
export function referencePageAnswer(request: HttpRequest, pagePath: string, page: HttpResponse): HttpResponse {
  if (!routedPath(request).endsWith('/')) return page;
  return { statusCode: 301, headers: { location: `../${posix.basename(pagePath)}` }, body: '' };
}

/** Whether `Accept-Encoding` takes gzip (by name or `*`, with a quality above 0). */
export function acceptsGzip(request: HttpRequest): boolean {
  const accepted = header(request, 'accept-encoding') ?? '';
  return accepted.split(',').some((entry) => {
    const [coding = '', ...parameters] = entry.split(';').map((part) => part.trim().toLowerCase());
    const quality = parameters.find((parameter) => parameter.startsWith('q='));
    return (coding === 'gzip' || coding === '*') && (quality === undefined || Number(quality.slice(2)) > 0);
  });
}

/** The script as text, made on the first request that does not take gzip (rare: every browser takes it). */
const plainText = new WeakMap<Buffer, string>();

/**
 * The script: gzipped when the client takes it, else as text (about 1.1 MB, under Lambda's 6 MB answer). Kept for a
 * year when asked for by the version the page names; any other URL of it gets the current script, revalidated.
 * `vary` names what else the answer depends on (`Origin` where the route answers browsers of other origins).
 */
export function referenceScriptResponse(request: HttpRequest, script: RedocScript, vary: readonly string[] = []): HttpResponse {
  const current = request.queryStringParameters?.v === script.version;
  const headers = {
    'content-type': 'text/javascript; charset=utf-8',
    'cache-control': current ? `public, max-age=${SCRIPT_MAX_AGE_SECONDS}, immutable` : 'no-cache',
    'x-content-type-options': 'nosniff',
    vary: [...vary, 'Accept-Encoding'].join(', '),
  };
  if (acceptsGzip(request)) {
    return {
      statusCode: 200,
      headers: { ...headers, 'content-encoding': 'gzip' },
      body: script.gzip.toString('base64'),
      isBase64Encoded: true,
    };
  }
  let body = plainText.get(script.gzip);
  if (body === undefined) plainText.set(script.gzip, (body = gunzipSync(script.gzip).toString('utf8')));
  return { statusCode: 200, headers, body };
}
