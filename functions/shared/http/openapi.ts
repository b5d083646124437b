import { isJsonObject } from '../json-object.ts';
import * as z from '../zod.ts';
import {
  componentRef,
  eventDataAsValue,
  eventDataComponent,
  eventDataUnion,
  eventStreamMedia,
  type StreamExample,
} from './openapi-streams.ts';
import { OPENAPI_31_VERSION, OPENAPI_VERSION, type JsonSchema, type OpenApiVersion } from './openapi-types.ts';

export { sseEventSchema, type StreamExample } from './openapi-streams.ts';
export { OPENAPI_31_VERSION, OPENAPI_VERSION, type JsonSchema, type OpenApiVersion } from './openapi-types.ts';

/*
 * OpenAPI documents built from the route table and the zod schemas that validate requests and shape responses,
 * so a document cannot describe an API the code no longer has. Each API assembles its own document
 * (published/openapi.ts, inbound/openapi.ts); this module only knows OpenAPI and zod.
 *
 * Each API serves the document twice: as OpenAPI 3.2 (`openapi.json`), whose `itemSchema` describes each server-sent
 * event, and as 3.1 (`openapi-3.1.json`) for the many tools that read 3.1 but not 3.2 (openapi-streams.ts). The two
 * differ only there.
 *
 * What zod's JSON Schema cannot carry: refinements (`z.refine`, `z.superRefine`) are checks in code, so a rule that
 * lives only there (an acceptance window, "well-formed Unicode") reaches the document only as the description the
 * schema's own module gives it with `z.meta`. `z.custom` has no JSON Schema at all; the one custom schema the APIs
 * use, a JSON object with every key kept (shared/json-object.ts), is written as an object that takes any property,
 * and any other makes the build throw rather than publish a schema that says nothing.
 */

/** Where a schema's JSON Schema describes what a caller sends (`input`: defaults optional) or receives (`output`). */
export type SchemaDirection = 'input' | 'output';

/** The schema of the document itself, for the operations that serve it. */
const OPENAPI_DOCUMENT_SCHEMA: JsonSchema = {
  type: 'object',
  description: `An OpenAPI document: ${OPENAPI_VERSION} at openapi.json, ${OPENAPI_31_VERSION} at openapi-3.1.json`,
  properties: {
    openapi: { type: 'string', enum: [OPENAPI_VERSION, OPENAPI_31_VERSION] },
    info: { type: 'object', additionalProperties: true },
    paths: { type: 'object', additionalProperties: true },
  },
  required: ['openapi', 'info', 'paths'],
  additionalProperties: true,
};

/**
 * Components from zod schemas, by id. Schemas registered together reference each other by `$ref` (a schema used
 * inside another registered one is not written twice); anything unregistered is inlined where it is used.
 */
export function schemaComponents(direction: SchemaDirection, schemas: Readonly<Record<string, z.ZodMiniType>>): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const generated = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: direction,
    uri: (id) => `#/components/schemas/${id}`,
    // Custom schemas come out as `{}` here, for the override to name or refuse.
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      const def = (zodSchema as unknown as { _zod: { def: { type: string; fn?: unknown } } })._zod.def;
      if (def.type !== 'custom') return;
      if (def.fn !== isJsonObject)
        throw new Error('A z.custom schema other than jsonObjectSchema has no JSON Schema; describe it in its module');
      // Said outright: a bare `{type: object}` is typed as an object with no keys by openapi-typescript's defaults.
      jsonSchema.type = 'object';
      jsonSchema.additionalProperties = true;
    },
  });
  return Object.fromEntries(
    Object.entries(generated.schemas).map(([id, schema]) => {
      // Components sit inside the document: no dialect or identity of their own.
      const { $schema: _dialect, $id: _id, ...rest } = schema as JsonSchema;
      return [id, rest];
    }),
  );
}

/**
 * Components of request bodies: as `schemaComponents('input')`, with each default said in words instead of
 * `default`. Generators read `default` in a component as "always present" (openapi-typescript's default options make
 * such a field required), which is true of answers and false of what a caller may leave out.
 */
export function requestBodyComponents(schemas: Readonly<Record<string, z.ZodMiniType>>): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(schemaComponents('input', schemas)).map(([id, schema]) => [id, defaultsInWords(schema)]));
}

function defaultsInWords(schema: JsonSchema): JsonSchema {
  const copy: JsonSchema = { ...schema };
  if ('default' in copy) {
    const { default: value, ...rest } = copy;
    const said = `When omitted: \`${JSON.stringify(value)}\`.`;
    return defaultsInWords({ ...rest, description: typeof rest.description === 'string' ? `${rest.description}. ${said}` : said });
  }
  if (isJsonObject(copy.properties)) {
    copy.properties = Object.fromEntries(
      Object.entries(copy.properties).map(([name, property]) => [name, defaultsInWords(property as JsonSchema)]),
    );
  }
  for (const keyword of ['oneOf', 'anyOf', 'allOf'] as const) {
    if (Array.isArray(copy[keyword])) copy[keyword] = (copy[keyword] as JsonSchema[]).map(defaultsInWords);
  }
  if (isJsonObject(copy.items)) copy.items = defaultsInWords(copy.items);
  return copy;
}

interface HeaderDoc {
  readonly description: string;
  readonly schema: JsonSchema;
  readonly required?: boolean;
}

export interface ResponseDoc {
  readonly description: string;
  /** `application/json` body: a component id. */
  readonly json?: string;
  /** `text/event-stream` body: the component id of one event (the union of the events the stream may send). */
  readonly events?: string;
  /** A body that is text but not JSON (a page, a script): its media type. */
  readonly text?: 'text/html' | 'text/javascript';
  /** Headers: a component's name, which is also the header's, or `[header, component]` where one header means different things. */
  readonly headers?: readonly (string | readonly [header: string, component: string])[];
  /** Examples of the JSON body, by name. */
  readonly examples?: Readonly<Record<string, unknown>>;
  /** Examples of the event stream, by name: its wire text. */
  readonly streamExamples?: Readonly<Record<string, StreamExample>>;
}

export interface ParameterDoc {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly description: string;
  readonly schema: JsonSchema;
  readonly required?: boolean;
}

export interface OperationDoc {
  readonly summary: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly parameters?: readonly ParameterDoc[];
  readonly requestBody?: {
    readonly schema: string;
    readonly required: boolean;
    readonly description?: string;
    readonly examples?: Readonly<Record<string, unknown>>;
  };
  readonly responses: Readonly<Record<string, ResponseDoc>>;
}

/** What a document needs of a route table entry (functions/routes.ts). */
interface DocumentedRoute {
  readonly id: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly scope?: string;
}

const RETRY_AFTER_HEADER: HeaderDoc = {
  description: 'Seconds to wait before retrying',
  schema: { type: 'integer', minimum: 1 },
  required: true,
};

const ETAG_HEADER: HeaderDoc = {
  description: "The document's version: send it back as If-None-Match to be answered 304 while it has not changed",
  schema: { type: 'string', pattern: '^W/"[^"]+"$' },
  required: true,
};

/**
 * What a document route answers besides the stage throttle: the document, kept only to be revalidated, or 304 to a
 * request naming its current version (functions/shared/http/openapi-server.ts).
 */
export const DOCUMENT_RESPONSES: Readonly<Record<string, ResponseDoc>> = {
  '200': { description: 'The document (Cache-Control: no-cache; revalidate with its ETag)', json: 'OpenApiDocument', headers: ['ETag'] },
  '304': { description: 'The document has not changed since the ETag named by If-None-Match: keep the copy you have', headers: ['ETag'] },
};

/** The request header a document route revalidates with. */
export const IF_NONE_MATCH_PARAMETER: ParameterDoc = {
  name: 'If-None-Match',
  in: 'header',
  description: 'The ETag of the copy the caller has (or `*`): answered 304, with no body, while the document has not changed',
  schema: { type: 'string' },
};

/**
 * The server variable's default in a document built without a request (the linted and the generated-from copies):
 * the twin's address. A served document names the address it was fetched from instead (openapi-server.ts).
 */
const UNSERVED_BASE_URL = 'http://127.0.0.1:3000';

export interface DocumentParts {
  /** Title, version, summary and description; every document has the same license and contact. */
  readonly info: { title: string; version: string; summary: string; description: string };
  /** The API's base path; operations' paths are relative to it (as the APIs' READMEs write them: `GET /workflows`). */
  readonly basePath: string;
  /** The one server: a URL variable for where the API is deployed, then the base path. */
  readonly server: { variable: string; description: string };
  readonly tags: readonly JsonSchema[];
  readonly routes: readonly DocumentedRoute[];
  readonly operations: Readonly<Record<string, OperationDoc>>;
  /** Path parameters by name, shared by every operation whose path has them. */
  readonly pathParameters: Readonly<Record<string, Omit<ParameterDoc, 'name' | 'in'>>>;
  /** The API's own schemas; `OpenApiDocument` (what the document routes answer) is added to every document. */
  readonly schemas: Readonly<Record<string, JsonSchema>>;
  /** The API's own headers; `Retry-After` (429 and 503 of both APIs) and `ETag` (the documents) are added to every document. */
  readonly headers: Readonly<Record<string, HeaderDoc>>;
  readonly securitySchemes?: Readonly<Record<string, JsonSchema>>;
  /** The scheme a route with a scope requires; the scope itself is the operation's `x-scope`, and said in its description. */
  readonly scopedScheme?: string;
}

/**
 * The document: every route of the table under `basePath`, each with its operation's description. A route without
 * one, or a description without its route, throws: the table is the list of operations, and the document follows it.
 */
export function openApiDocument(own: DocumentParts, version: OpenApiVersion): JsonSchema {
  const parts: DocumentParts = {
    ...own,
    schemas: { ...own.schemas, OpenApiDocument: OPENAPI_DOCUMENT_SCHEMA },
    headers: { 'Retry-After': RETRY_AFTER_HEADER, ETag: ETAG_HEADER, ...own.headers },
  };
  const routes = parts.routes.filter((route) => route.path.startsWith(`${parts.basePath}/`));
  const documented = new Set(Object.keys(parts.operations));
  const missing = routes.filter((route) => !documented.has(route.id)).map((route) => route.id);
  const stale = [...documented].filter((id) => !routes.some((route) => route.id === id));
  if (missing.length > 0 || stale.length > 0) {
    throw new Error(
      `The OpenAPI operations do not match the route table: undocumented ${missing.join(', ') || '-'}; unknown ${stale.join(', ') || '-'}`,
    );
  }
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.slice(parts.basePath.length);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operationObject(route, parts.operations[route.id]!, parts, version);
  }
  return {
    openapi: version,
    info: {
      ...parts.info,
      contact: { name: 'The operator of this deployment' },
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      {
        url: `{${parts.server.variable}}${parts.basePath}`,
        variables: { [parts.server.variable]: { default: UNSERVED_BASE_URL, description: parts.server.description } },
      },
    ],
    tags: parts.tags,
    paths,
    components: {
      schemas: version === OPENAPI_31_VERSION ? { ...eventDataAsValue(parts.schemas), ...eventDataUnions(parts) } : parts.schemas,
      headers: Object.fromEntries(Object.entries(parts.headers).map(([name, header]) => [name, { ...header }])),
      ...(parts.securitySchemes ? { securitySchemes: parts.securitySchemes } : {}),
    },
  };
}

function operationObject(route: DocumentedRoute, operation: OperationDoc, parts: DocumentParts, version: OpenApiVersion): JsonSchema {
  const pathParameters = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => {
    const parameter = parts.pathParameters[name!];
    if (!parameter) throw new Error(`Route ${route.id}: path parameter ${name} has no description`);
    return { name, in: 'path', required: true, ...parameter };
  });
  // The scope is not listed in the requirement: an HTTP bearer scheme has no scopes to list it among (only OAuth 2 does).
  const scoped = route.scope !== undefined && parts.scopedScheme !== undefined;
  return {
    operationId: route.id,
    summary: operation.summary,
    description: scoped ? `${operation.description}\n\nThe key needs the scope \`${route.scope}\` (or \`*\`).` : operation.description,
    tags: operation.tags,
    security: scoped ? [{ [parts.scopedScheme]: [] }] : [],
    ...(route.scope ? { 'x-scope': route.scope } : {}),
    parameters: [...pathParameters, ...(operation.parameters ?? []).map((parameter) => ({ required: false, ...parameter }))],
    ...(operation.requestBody
      ? {
          requestBody: {
            required: operation.requestBody.required,
            ...(operation.requestBody.description ? { description: operation.requestBody.description } : {}),
            content: {
              'application/json': { schema: componentRef(operation.requestBody.schema), ...examplesObject(operation.requestBody.examples) },
            },
          },
        }
      : {}),
    responses: Object.fromEntries(
      Object.entries(operation.responses).map(([status, response]) => [status, responseObject(response, parts, version)]),
    ),
  };
}

function responseObject(response: ResponseDoc, parts: DocumentParts, version: OpenApiVersion): JsonSchema {
  const headers = (response.headers ?? []).map((entry) => (typeof entry === 'string' ? [entry, entry] : entry));
  for (const [, component] of headers) if (!parts.headers[component]) throw new Error(`Header ${component} is not a component`);
  const content: Record<string, unknown> = {};
  if (response.json) content['application/json'] = { schema: componentRef(response.json), ...examplesObject(response.examples) };
  if (response.events) {
    if (!parts.schemas[response.events]) throw new Error(`Event stream ${response.events} is not a component`);
    content['text/event-stream'] = eventStreamMedia(response.events, response.streamExamples ?? {}, version);
  }
  if (response.text) content[response.text] = { schema: { type: 'string' } };
  return {
    description: response.description,
    ...(headers.length > 0
      ? { headers: Object.fromEntries(headers.map(([name, component]) => [name, { $ref: `#/components/headers/${component}` }])) }
      : {}),
    ...(Object.keys(content).length > 0 ? { content } : {}),
  };
}

/** The 3.1 components of what generated SSE clients hand over: one per event union a response streams. */
function eventDataUnions(parts: DocumentParts): Record<string, JsonSchema> {
  const streamed = Object.values(parts.operations).flatMap((operation) =>
    Object.values(operation.responses).flatMap((response) => (response.events ? [response.events] : [])),
  );
  return Object.fromEntries(
    [...new Set(streamed)].map((name) => [eventDataComponent(name), eventDataUnion(name, parts.schemas[name] as JsonSchema)]),
  );
}

function examplesObject(examples: Readonly<Record<string, unknown>> | undefined) {
  if (!examples) return {};
  return { examples: Object.fromEntries(Object.entries(examples).map(([name, value]) => [name, { value }])) };
}
