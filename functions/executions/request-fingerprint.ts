import { createHash } from 'node:crypto';
import type { ExecuteRequest } from './execute-request.ts';

/**
 * What makes two starts "the same request" for an `Idempotency-Key`: the workflow and the body as the API reads it.
 * The body is taken after validation, so what the API ignores (unknown fields, key order, whitespace, `1.0` for `1`)
 * never makes a retry a different request, while every value the execution would see does. The route is left out on
 * purpose: execute and stream start the same execution and differ only in how it is answered, so a client may start an execution
 * with one and pick it up with the other under the same key.
 */
export function requestFingerprint(workflowId: string, request: ExecuteRequest): string {
  return createHash('sha256')
    .update(canonicalJson({ workflow_id: workflowId, body: request }), 'utf8')
    .digest('base64url');
}

/**
 * JSON with every object's keys sorted, at every depth: one text for every spelling of the same document. Keys are
 * read as own entries (a `__proto__` key the caller sent is data like any other); an undefined property is left
 * out, as JSON.stringify does. Bodies nest at most MAX_JSON_DEPTH levels, so the recursion stays shallow.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
