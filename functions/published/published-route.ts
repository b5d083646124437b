import { logger } from '#shared/lambda/powertools.ts';
import { meterSubject } from '#shared/metering/cost-meter.ts';
import type { Context } from 'aws-lambda';
import { routeById } from '#functions/routes.ts';
import { NotFoundError, PayloadTooLargeError, ValidationError } from '#shared/errors.ts';
import { toFieldIssues } from '#shared/http/field-issues.ts';
import { header, withHttpStack, rawBody, type HttpRequest, type HttpResponse } from '#shared/http/http-stack.ts';
import { EXECUTION_ID_PATTERN, MAX_JSON_DEPTH, WORKFLOW_ID_PATTERN } from '#shared/limits.ts';
import { nestsDeeperThan } from '#shared/json-object.ts';
import { parseUtf8Json } from '#shared/http/well-formed.ts';
import type * as z from '#shared/zod.ts';
import type { Caller } from '#shared/access.ts';
import { authenticate } from './api-keys-service.ts';
import { routeCors } from './route-cors.ts';
import { apiKeysFromEnv } from './wiring.ts';

/**
 * A Published Workflow API route: the shared HTTP stack, then the caller's key checked against the scope
 * the route table names for this route, before the adapter runs. Browsers on the deployment's allowed origins
 * (CORS_ALLOWED_ORIGINS) may call it: its function also answers the preflights of its resource.
 */
export function publishedRoute(
  routeId: string,
  adapter: (request: HttpRequest, caller: Caller, context: Context) => Promise<HttpResponse>,
) {
  const route = routeById(routeId);
  if (!route.scope) throw new Error(`Route ${routeId} has no scope`);
  const scope = route.scope;
  const keys = apiKeysFromEnv();
  return withHttpStack(
    route,
    async (request, context) => {
      const caller = await authenticate(keys, header(request, 'authorization'), scope);
      meterSubject({ project: caller.projectId });
      logger.appendKeys({ project_id: caller.projectId, key_id: caller.keyId });
      return adapter(request, caller, context);
    },
    { cors: routeCors(route) },
  );
}

/**
 * Path ids the service makes itself, and what a malformed one is answered. An id no real id can be (a
 * thousand bytes, a dot) is a 404 at once: it never becomes a DynamoDB key, which would refuse it with a 500.
 */
const PATH_IDS = new Map([
  ['workflow_id', { pattern: WORKFLOW_ID_PATTERN, notFound: 'Workflow not found' }],
  ['execution_id', { pattern: EXECUTION_ID_PATTERN, notFound: 'Execution not found' }],
]);

export function pathParameter(request: HttpRequest, name: string): string {
  const value = request.pathParameters?.[name];
  if (!value) throw new ValidationError([{ field: name, message: 'is required in the path' }]);
  const id = PATH_IDS.get(name);
  if (id && !id.pattern.test(value)) throw new NotFoundError(id.notFound);
  return value;
}

/** A JSON body validated by `schema`; an empty body is `{}` so optional-only bodies may be omitted. */
export function jsonBody<Schema extends z.ZodMiniType>(request: HttpRequest, schema: Schema, maxBytes: number): z.infer<Schema> {
  const body = rawBody(request);
  if (body.byteLength > maxBytes) throw new PayloadTooLargeError(`Request body exceeds ${maxBytes} bytes`);
  let document: unknown = {};
  if (body.byteLength > 0) {
    try {
      document = parseUtf8Json(body);
    } catch {
      throw new ValidationError([{ field: 'body', message: 'is not valid JSON' }]);
    }
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new ValidationError([{ field: 'body', message: 'must be a JSON object' }]);
  }
  if (nestsDeeperThan(document, MAX_JSON_DEPTH)) {
    throw new ValidationError([{ field: 'body', message: `must not nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep` }]);
  }
  const parsed = schema.safeParse(document);
  if (!parsed.success) throw new ValidationError(toFieldIssues(parsed.error));
  return parsed.data;
}
