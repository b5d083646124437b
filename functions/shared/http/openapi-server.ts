import { matchesIfNoneMatch, weakEntityTag } from './entity-tag.ts';
import { externalUrl } from './external-url.ts';
import { header, type HttpRequest, type HttpResponse } from './http-stack.ts';
import type { JsonSchema } from './openapi.ts';

interface ServerObject {
  url: string;
  variables: Record<string, { default: string; description: string }>;
}

/**
 * The document as served to `request`: its server's URL variable defaults to where the caller reached the API (the
 * scheme and host it used, and the stage path or a custom domain's base path when it went through one), so a tool
 * that loads the document calls the same deployment. Without a usable Host (external-url.ts bounds it) the default
 * is the deployment's own domain name, or that path alone, which tools resolve against the document's own URL.
 */
function servedDocument(document: JsonSchema, request: HttpRequest): JsonSchema {
  const base = externalUrl(request, '');
  const servers = (document.servers as ServerObject[]).map((server) => ({
    ...server,
    variables: Object.fromEntries(Object.entries(server.variables).map(([name, variable]) => [name, { ...variable, default: base }])),
  }));
  return { ...document, servers };
}

/**
 * What the document varies with: the Host it names as its server, and the coding API Gateway may compress it with.
 * A route that answers browsers of other origins puts `Origin` first (`extraVary`): this Vary replaces the CORS one.
 */
const DOCUMENT_VARY = ['Host', 'Accept-Encoding'];

/**
 * The answer of a document route, served like a static file: kept by a browser or cache only to be revalidated
 * (`no-cache`), so a deploy that changes the document is seen on the next request, by its weak ETag (entity-tag.ts),
 * which is the digest of the bytes served to this host: a cache keyed without the Host gets a different tag, never
 * a 304, for another host's copy. `If-None-Match` naming the current tag answers 304 with no body.
 */
export function servedDocumentResponse(document: JsonSchema, request: HttpRequest, extraVary: readonly string[] = []): HttpResponse {
  const body = JSON.stringify(servedDocument(document, request));
  const etag = weakEntityTag(body);
  const headers = { 'cache-control': 'no-cache', etag, vary: [...extraVary, ...DOCUMENT_VARY].join(', ') };
  if (matchesIfNoneMatch(header(request, 'if-none-match'), etag)) return { statusCode: 304, headers, body: '' };
  return { statusCode: 200, headers: { 'content-type': 'application/json', ...headers }, body };
}
