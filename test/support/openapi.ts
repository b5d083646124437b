import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { webhookApiDocument } from '#inbound/openapi.ts';
import { publishedApiDocument } from '#published/openapi.ts';
import { API_STAGE } from '#functions/routes.ts';

/**
 * Holds the APIs to their OpenAPI documents: every answer a test receives must be one its operation describes (the
 * status, the required headers, the content type, the JSON body against its schema, each server-sent event against
 * its item schema and its `data` against the event's own schema). An answer the document does not describe fails
 * the test. The e2e helpers (http.ts, sse.ts, fetch.ts, published.ts) run every answer through here on their own;
 * this module opens nothing, so a pure unit test can hold it to its word (test/unit/openapi-check.test.ts).
 *
 * Two kinds of request are outside the documents on purpose:
 * - a request a test sends deliberately outside the contract at the gateway (a path or method the API does not have,
 *   another stage): the caller says why (`undocumented`), and the answer must still be a refusal in its API's error
 *   shape (`{"detail"}` for the Workflow API, whose REST API's own body carries `error` too, `{"error"}` for the webhooks);
 * - a CORS preflight (`OPTIONS`): the browser's protocol, not an operation of the API. The documents describe what a
 *   caller calls (and feed the typed client), and CORS is off unless a deployment names origins, so they leave it out;
 *   a preflight is held to the Fetch standard instead: 204 with no body and the Access-Control-Allow-* headers, or a
 *   refusal in its API's error shape.
 */

type Json = Record<string, any>;

/** A request as the check needs it: the method and the whole URL (the stage prefix is taken off). */
export interface ApiCall {
  method: string;
  url: string;
}

/** What arrives before the body: the status and the headers (names in lower case, as Node gives them). */
export interface AnswerHead {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

export interface Answer extends AnswerHead {
  text: string;
}

/** One server-sent event as a parser hands it over: `data` still the text of the `data:` lines. */
export interface RawEvent {
  id?: string;
  /** The `retry:` field, when the block sets it (digits only, as EventSource takes it). */
  retry?: number;
  event: string;
  data: string;
}

/** Checks what follows the head: each event of a stream as it comes, or the whole body once it has ended. */
export interface BodyCheck {
  event(event: RawEvent): void;
  body(text: string): void;
}

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
  if (!validate(value))
    throw new Error(
      `${what} does not match the OpenAPI document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 2000)}`,
    );
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

/** The path as the API sees it (without the stage), and the document whose base path it is under, if any. */
function locate(url: string): { path: string; index: number } {
  const { pathname } = new URL(url);
  const path = pathname.startsWith(`/${API_STAGE}/`) ? pathname.slice(API_STAGE.length + 1) : pathname;
  const index = DOCUMENTS.findIndex((document) => path === document.basePath || path.startsWith(`${document.basePath}/`));
  return { path, index };
}

const headerOf = (head: AnswerHead, name: string) => {
  const value = head.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
};

const mediaTypeOf = (head: AnswerHead) =>
  String(headerOf(head, 'content-type') ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();

const NOTHING_TO_CHECK: BodyCheck = { event: () => undefined, body: () => undefined };

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what}: the body is not JSON: ${text.slice(0, 200)}`);
  }
}

/**
 * Checks the head of the answer to `call` against its operation (throws when the document does not describe it) and
 * answers how to check the rest. A URL under neither API's base path (a callback receiver, a presigned S3 URL, a
 * probe server) is not an answer of the APIs: nothing to check.
 */
export function documentedAnswer(call: ApiCall, head: AnswerHead): BodyCheck {
  const { path, index } = locate(call.url);
  if (index < 0) return NOTHING_TO_CHECK;
  const { basePath, json } = DOCUMENTS[index]!;
  const what = `${call.method} ${path} -> ${head.status}`;
  if (call.method.toUpperCase() === 'OPTIONS') return preflightAnswer(index, head, what);
  const template = templateOf(json.paths, path.slice(basePath.length));
  const method = call.method.toLowerCase();
  if (!template || !json.paths[template][method]) throw new Error(`${what}: the document has no operation ${call.method} ${path}`);
  const response = json.paths[template][method].responses[String(head.status)];
  if (!response) throw new Error(`${what}: the document does not list status ${head.status} for ${call.method} ${template}`);
  const at = ['paths', template, method, 'responses', String(head.status)];

  for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
    const definition = header.$ref ? json.components.headers[header.$ref.split('/').at(-1)] : header;
    const value = headerOf(head, name);
    if (value === undefined) {
      if (definition.required) throw new Error(`${what}: the header ${name} is missing`);
      continue;
    }
    const schemaAt = header.$ref
      ? ['components', 'headers', header.$ref.split('/').at(-1) as string, 'schema']
      : [...at, 'headers', name, 'schema'];
    check(validatorAt(index, schemaAt), headerValue(value, definition.schema), `${what}: header ${name}`);
  }
  const media = Object.keys(response.content ?? {});
  if (media.length === 0) {
    return {
      event: () => {
        throw new Error(`${what}: the document describes no body, got an event`);
      },
      body: (text) => {
        if (text !== '') throw new Error(`${what}: the document describes no body, got ${text.slice(0, 200)}`);
      },
    };
  }
  const contentType = mediaTypeOf(head);
  if (!media.includes(contentType))
    throw new Error(`${what}: content-type ${contentType || '(none)'}, the document says ${media.join(' or ')}`);
  if (contentType === 'application/json') {
    const schema = validatorAt(index, [...at, 'content', 'application/json', 'schema']);
    return {
      event: () => {
        throw new Error(`${what}: a JSON answer has no events`);
      },
      body: (text) => check(schema, parseJson(text, what), what),
    };
  }
  if (contentType !== 'text/event-stream') {
    // A page or a script: text the document types only as a string; its tests read what it says.
    return {
      event: () => {
        throw new Error(`${what}: a ${contentType} answer has no events`);
      },
      body: (text) => {
        if (text === '') throw new Error(`${what}: an empty ${contentType} body`);
      },
    };
  }
  const checkEvent = eventCheck(index, json, [...at, 'content', 'text/event-stream', 'itemSchema'], what);
  return { event: checkEvent, body: (text) => parseEventStream(text).forEach(checkEvent) };
}

/** A header's value as its schema types it: the text, or the number an integer header stands for. */
function headerValue(value: string, schema: Json | undefined): unknown {
  if (schema?.type === 'integer' || schema?.type === 'number') return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  return value;
}

/** Each event of a `text/event-stream` body against `itemSchema`, and its `data` against the event's `contentSchema`. */
function eventCheck(index: number, json: Json, mediaItemAt: string[], what: string): (event: RawEvent) => void {
  const mediaItem = mediaItemAt.reduce<Json>((node, part) => node[part], json);
  // The item schema names its component (the stream's event union): the branches are looked up there.
  const itemAt = mediaItem.$ref ? (mediaItem.$ref as string).slice(2).split('/') : mediaItemAt;
  const itemSchema = itemAt.reduce<Json>((node, part) => node[part], json);
  const item = validatorAt(index, itemAt);
  return (event) => {
    check(item, event, `${what}: event ${JSON.stringify(event).slice(0, 120)}`);
    // A stream of one kind of event names its schema directly (a oneOf of one is refused by the lint).
    const branchAt = itemSchema.oneOf
      ? [
          ...itemAt,
          'oneOf',
          String((itemSchema.oneOf as Json[]).findIndex((candidate) => candidate.properties.event.const === event.event)),
        ]
      : itemAt;
    check(
      validatorAt(index, [...branchAt, 'properties', 'data', 'contentSchema']),
      parseJson(event.data, `${what}: ${event.event}`),
      `${what}: ${event.event} data`,
    );
  };
}

/** A CORS preflight: 204 with what a browser decides by and no body, or a refusal in the API's error shape. */
function preflightAnswer(index: number, head: AnswerHead, what: string): BodyCheck {
  if (head.status === 204) {
    for (const name of ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers']) {
      if (headerOf(head, name) === undefined) throw new Error(`${what}: a preflight's 204 without ${name}`);
    }
    return {
      event: () => {
        throw new Error(`${what}: a preflight has no events`);
      },
      body: (text) => {
        if (text !== '') throw new Error(`${what}: a preflight's 204 with a body: ${text.slice(0, 200)}`);
      },
    };
  }
  if (head.status !== 403 && head.status !== 404)
    throw new Error(`${what}: a preflight is answered 204, or refused with 403 (origin not allowed) or 404 (CORS off, no such resource)`);
  return errorBodyCheck([index], head, what);
}

/** A refusal in the error shape of one of the APIs at `indexes`: JSON matching that document's `Error` component. */
function errorBodyCheck(indexes: number[], head: AnswerHead, what: string): BodyCheck {
  if (head.status < 400) throw new Error(`${what}: a request outside the document must be refused, not answered ${head.status}`);
  if (mediaTypeOf(head) !== 'application/json')
    throw new Error(`${what}: a refusal must be application/json, got ${mediaTypeOf(head) || '(none)'}`);
  return {
    event: () => {
      throw new Error(`${what}: a refusal has no events`);
    },
    body: (text) => {
      const body = parseJson(text, what);
      const failures: string[] = [];
      for (const index of indexes) {
        try {
          return check(validatorAt(index, ['components', 'schemas', 'Error']), body, `${what}: the error body`);
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
      throw new Error(failures.join('\n'));
    },
  };
}

/**
 * A request sent outside the contract on purpose (`why` says how): its answer must be a refusal in the error shape of
 * the API it is under, or of either API for a path under neither (each host answers those in its own API's shape).
 */
function refusalOutsideDocument(call: ApiCall, head: AnswerHead, why: string): BodyCheck {
  const { path, index } = locate(call.url);
  return errorBodyCheck(index < 0 ? DOCUMENTS.map((_, i) => i) : [index], head, `${call.method} ${path} -> ${head.status} (${why})`);
}

/** The check of an answer: the document's, or with `undocumented` the refusal of a request outside it. */
export function answerCheck(call: ApiCall, head: AnswerHead, undocumented?: string): BodyCheck {
  return undocumented === undefined ? documentedAnswer(call, head) : refusalOutsideDocument(call, head, undocumented);
}

/** Throws unless the whole answer to `call` is one the document describes (or, with `undocumented`, a refusal in its shape). */
export function expectDocumented(call: ApiCall, answer: Answer, undocumented?: string): void {
  answerCheck(call, answer, undocumented).body(answer.text);
}

/** The events of a stream as WHATWG server-sent events frame them; comment lines (`:`) are not events. */
export function parseEventStream(text: string): RawEvent[] {
  const events: RawEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const fields: Record<string, string[]> = {};
    for (const line of block.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const [name, value] = colon < 0 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')];
      (fields[name] ??= []).push(value);
    }
    if (!fields.data) continue;
    const retry = fields.retry?.at(-1);
    events.push({
      ...(fields.id ? { id: fields.id.at(-1)! } : {}),
      ...(retry !== undefined && /^\d+$/.test(retry) ? { retry: Number(retry) } : {}),
      event: fields.event?.at(-1) ?? 'message',
      data: fields.data.join('\n'),
    });
  }
  return events;
}
