import { externalUrl } from './external-url.ts';
import type { HttpRequest } from './http-stack.ts';
import type { JsonSchema } from './openapi.ts';

interface ServerObject {
  url: string;
  variables: Record<string, { default: string; description: string }>;
}

/**
 * The document as served to `request`: its server's URL variable defaults to where the caller reached the API (the
 * scheme and host it used, and the stage path or a custom domain's base path when it went through one), so a tool
 * that loads the document calls the same deployment. Without a usable Host the default is that path alone, which
 * tools resolve against the document's own URL.
 */
export function servedDocument(document: JsonSchema, request: HttpRequest): JsonSchema {
  const base = externalUrl(request, '');
  const servers = (document.servers as ServerObject[]).map((server) => ({
    ...server,
    variables: Object.fromEntries(Object.entries(server.variables).map(([name, variable]) => [name, { ...variable, default: base }])),
  }));
  return { ...document, servers };
}
