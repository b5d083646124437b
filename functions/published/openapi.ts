import { routes } from '#functions/routes.ts';
import { OPENAPI_VERSION, openApiDocument, type JsonSchema, type OpenApiVersion } from '#shared/http/openapi.ts';
import { EXECUTION_ID_PATTERN, MAX_REQUESTS_PER_MINUTE_PER_KEY, WORKFLOW_ID_PATTERN } from '#shared/limits.ts';
import { PUBLISHED_OPERATIONS } from './openapi-operations.ts';
import { PUBLISHED_SCHEMAS } from './openapi-schemas.ts';

/**
 * The Published Workflow API's OpenAPI document (GET /api/v1/published/openapi.json): its operations are the route
 * table's, its schemas the zod schemas that validate the requests and type the answers.
 */

const PUBLISHED_BASE_PATH = '/api/v1/published';

const built = new Map<OpenApiVersion, JsonSchema>();

/** Built once per process and version: the route table and the schemas do not change while it runs. */
export function publishedApiDocument(version: OpenApiVersion = OPENAPI_VERSION): JsonSchema {
  let document = built.get(version);
  if (!document) {
    document = buildDocument(version);
    built.set(version, document);
  }
  return document;
}

function buildDocument(version: OpenApiVersion): JsonSchema {
  return openApiDocument(
    {
      info: {
        title: 'Published Workflow API',
        version: '1',
        summary: 'List, run, stream, poll, stop and approve the workflows of a published project with an API key',
        description: INFO_DESCRIPTION,
      },
      basePath: PUBLISHED_BASE_PATH,
      server: {
        variable: 'base_url',
        description:
          "The API's URL: where this document was fetched from (on AWS the stack's ApiUrl output without its trailing slash, " +
          'https://<id>.execute-api.<region>.amazonaws.com/prod)',
      },
      tags: [
        { name: 'workflows', description: "The workflows of the project's active publication" },
        { name: 'executions', description: 'Executions: start, stream, poll, stop, approve and reject' },
        { name: 'meta', description: 'About the API itself' },
      ],
      routes,
      operations: PUBLISHED_OPERATIONS,
      pathParameters: {
        workflow_id: {
          description: 'A workflow of the active publication',
          schema: { type: 'string', pattern: WORKFLOW_ID_PATTERN.source },
        },
        execution_id: { description: 'An execution of this project', schema: { type: 'string', pattern: EXECUTION_ID_PATTERN.source } },
      },
      schemas: PUBLISHED_SCHEMAS,
      headers: {
        'X-Execution-Id': {
          description:
            'The execution the answer is about, sent with the status line before any byte of the body (the one an earlier request ' +
            'with the same Idempotency-Key started, when it did)',
          schema: { type: 'string', pattern: EXECUTION_ID_PATTERN.source },
          required: true,
        },
        ExecutionLocation: {
          description: "Where the execution's status continues: its GET /executions/{execution_id} URL, to poll if the connection drops",
          schema: { type: 'string' },
          required: true,
        },
        StreamLocation: {
          description:
            "Where the stream continues: the execution's GET /executions/{execution_id}/stream URL, to resume with Last-Event-ID if " +
            'the connection drops',
          schema: { type: 'string' },
          required: true,
        },
        'Cache-Control': { description: 'no-cache', schema: { type: 'string', const: 'no-cache' } },
        'X-Accel-Buffering': { description: 'no: proxies must not buffer the stream', schema: { type: 'string', const: 'no' } },
      },
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A project API key: `Authorization: Bearer <API_KEY>`. Each operation names the one scope its key needs (`x-scope`, and ' +
            'in its description); `*` holds them all.',
        },
      },
      scopedScheme: 'apiKey',
    },
    version,
  );
}

const INFO_DESCRIPTION = [
  "Runs the workflows of a project's active publication. Every operation but the two documents needs a project API key " +
    "(`Authorization: Bearer <API_KEY>`) holding the operation's scope.",
  'An execution is started by `execute` (answers when it settles) or `stream` (server-sent events until `complete`); any stream ' +
    'resumes exactly where it broke off with `Last-Event-ID`, and never starts a second execution. ' +
    '`Idempotency-Key` makes a start safe to ' +
    'retry.',
  `Refusals are JSON \`{"detail": "..."}\`; 429 and 503 carry Retry-After. Each key may send ${MAX_REQUESTS_PER_MINUTE_PER_KEY} ` +
    `requests a minute.`,
  'Every string a request body holds, keys of `input`, `initial_memory` and `overrides` at any depth included, must be ' +
    'well-formed Unicode: half of a surrogate pair alone (JSON `"\\ud800"`) is answered 400 naming the field, and nothing starts ' +
    'or is decided.',
  'This document is also served as OpenAPI 3.1 at `openapi-3.1.json`, beside this one.',
].join('\n\n');
