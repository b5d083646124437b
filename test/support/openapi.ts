import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { webhookApiDocument } from '#inbound/openapi.ts';
import { publishedApiDocument } from '#published/openapi.ts';
import { API_STAGE } from '#functions/routes.ts';
import { observeResponses, type HttpResult } from './http.ts';

/**
 * Holds the APIs to their OpenAPI documents: every answer a test receives must be one its operation describes
 * (the status, the required headers, the JSON body against its schema, each server-sent event against its item
 * schema and its `data` against the event's own schema). An answer the document does not describe fails the test.
 */

type Json = Record<string, any>;

interface Document {
  basePath: string;
  json: Json;
}

const DOCUMENTS: Document[] = [
  { basePath: '/api/v1/published', json: publishedApiDocument() },
  { basePath: '/api/v1/webhooks', json: webhookApiDocument() },
];

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
// RFC 3339 date-time, which requires the offset: what the APIs send (toISOString).
ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
DOCUMENTS.forEach((document, index) => ajv.addSchema({ ...document.json, $id: documentId(index) }));

function documentId(index: number) {
  return `urn:openapi:${index}`;
}

const pointer = (parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
const compiled = new Map<string, ValidateFunction>();

/** A validator for the schema at `parts` of document `index`, its `$ref`s resolved inside the same document. */
function validatorAt(index: number, parts: string[]): ValidateFunction {
  const ref = `${documentId(index)}#/${pointer(parts)}`;
  let validate = compiled.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: ref });
    compiled.set(ref, validate);
  }
  return validate;
}

function check(validate: ValidateFunction, value: unknown, what: string): void {
  if (!validate(value)) throw new Error(`${what} does not match the OpenAPI document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 2000)}`);
}

/** The operation's path template matching `path`: literal segments win over parameters, as on API Gateway. */
function templateOf(paths: Json, path: string): string | undefined {
  const segments = path.split('/');
  const candidates = Object.keys(paths).filter((template) => {
    const parts = template.split('/');
    return parts.length === segments.length && parts.every((part, i) => /^\{\w+\}$/.test(part) || part === segments[i]);
  });
  const literals = (template: string) => template.split('/').filter((part) => !part.startsWith('{')).length;
  return candidates.sort((a, b) => literals(b) - literals(a))[0];
}

/** Throws unless the answer to `method url` is one the document describes. */
export function expectDocumented(request: { method: string; url: string }, result: HttpResult): void {
  const url = new URL(request.url);
  const path = url.pathname.startsWith(`/${API_STAGE}/`) ? url.pathname.slice(API_STAGE.length + 1) : url.pathname;
  const index = DOCUMENTS.findIndex((document) => path.startsWith(`${document.basePath}/`));
  if (index < 0) return;
  const { basePath, json } = DOCUMENTS[index]!;
  const what = `${request.method} ${path} -> ${result.status}`;
  const template = templateOf(json.paths, path.slice(basePath.length));
  const method = request.method.toLowerCase();
  if (!template || !json.paths[template][method]) throw new Error(`${what}: the document has no operation ${request.method} ${path}`);
  const response = json.paths[template][method].responses[String(result.status)];
  if (!response) throw new Error(`${what}: the document does not list status ${result.status} for ${request.method} ${template}\n${result.text.slice(0, 500)}`);
  const at = ['paths', template, method, 'responses', String(result.status)];

  for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
    const definition = header.$ref ? json.components.headers[header.$ref.split('/').at(-1)] : header;
    if (definition.required && result.headers[name.toLowerCase()] === undefined) throw new Error(`${what}: the header ${name} is missing`);
  }
  const contentType = String(result.headers['content-type'] ?? '').split(';')[0]!.trim();
  const media = Object.keys(response.content ?? {});
  if (media.length === 0) {
    if (result.text !== '') throw new Error(`${what}: the document describes no body, got ${result.text.slice(0, 200)}`);
    return;
  }
  if (!media.includes(contentType)) throw new Error(`${what}: content-type ${contentType || '(none)'}, the document says ${media.join(' or ')}`);
  if (contentType === 'application/json') {
    let body: unknown;
    try {
      body = JSON.parse(result.text);
    } catch {
      throw new Error(`${what}: the body is not JSON: ${result.text.slice(0, 200)}`);
    }
    check(validatorAt(index, [...at, 'content', 'application/json', 'schema']), body, what);
    return;
  }
  checkEvents(index, json, [...at, 'content', 'text/event-stream', 'itemSchema'], result.text, what);
}

/** Each event of a `text/event-stream` body against `itemSchema`, and its `data` against the event's `contentSchema`. */
function checkEvents(index: number, json: Json, itemAt: string[], text: string, what: string): void {
  const itemSchema = itemAt.reduce<Json>((node, part) => node[part], json);
  const item = validatorAt(index, itemAt);
  for (const event of parseEventStream(text)) {
    check(item, event, `${what}: event ${JSON.stringify(event).slice(0, 120)}`);
    const branch = (itemSchema.oneOf as Json[]).findIndex((candidate) => candidate.properties.event.const === event.event);
    check(validatorAt(index, [...itemAt, 'oneOf', String(branch), 'properties', 'data', 'contentSchema']), JSON.parse(event.data), `${what}: ${event.event} data`);
  }
}

/** The events of a stream as WHATWG server-sent events frame them; comment lines (`:`) are not events. */
export function parseEventStream(text: string): { id?: string; event: string; data: string }[] {
  const events = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const fields: Record<string, string[]> = {};
    for (const line of block.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const [name, value] = colon < 0 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')];
      (fields[name] ??= []).push(value);
    }
    if (!fields.data) continue;
    events.push({ ...(fields.id ? { id: fields.id.at(-1)! } : {}), event: fields.event?.at(-1) ?? 'message', data: fields.data.join('\n') });
  }
  return events;
}

/** From now on in this test file, every answer of either API must be one its document describes. */
export function holdResponsesToDocuments(): () => void {
  return observeResponses(expectDocumented);
}
