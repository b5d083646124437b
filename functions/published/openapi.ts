import { decisionRequestSchema, executeRequestSchema } from '#executions/execute-request.ts';
import {
  decisionResponseSchema,
  executeResponseSchema,
  executionStatusSchema,
  executionViewSchema,
  pendingApprovalSchema,
  executionUsageSchema,
  stopResponseSchema,
} from '#executions/execution-views.ts';
import {
  agentHandoffDataSchema,
  completeDataSchema,
  errorDataSchema,
  imageDataSchema,
  lifecycleDecisionDataSchema,
  lifecycleStatusDataSchema,
  nodeUpdateDataSchema,
  resumeDataSchema,
  startDataSchema,
  tokenDataSchema,
  toolCallDataSchema,
} from '#executions/stream-event-schemas.ts';
import { routeById, routes } from '#functions/routes.ts';
import { publishedErrorBodySchema } from '#shared/http/http-errors.ts';
import {
  DOCUMENT_RESPONSES,
  IF_NONE_MATCH_PARAMETER,
  OPENAPI_VERSION,
  openApiDocument,
  requestBodyComponents,
  schemaComponents,
  sseEventSchema,
  type JsonSchema,
  type OpenApiVersion,
  type OperationDoc,
  type ResponseDoc,
} from '#shared/http/openapi.ts';
import {
  DEFAULT_MAX_OPEN_STREAMS_PER_KEY,
  EXECUTION_ID_PATTERN,
  MAX_BLOCKING_EXECUTE_MS,
  MAX_EXECUTE_BODY_BYTES,
  MAX_REQUESTS_PER_MINUTE_PER_KEY,
  STREAM_RESUME_RETRY_MS,
  WORKFLOW_ID_PATTERN,
} from '#shared/limits.ts';
import { MINUTE_MS } from '#shared/time.ts';
import { EXECUTION_ID, PUBLISHED_ERRORS, publishedStreamExamples as STREAMS } from './openapi-examples.ts';
import { streamProbeEndSchema, streamProbeQuerySchema } from './stream-probe.ts';
import { workflowDetailSchema, workflowListSchema, workflowSummarySchema } from './workflow-views.ts';

/**
 * The Published Workflow API's OpenAPI document (GET /api/v1/published/openapi.json): its operations are the route
 * table's, its schemas the zod schemas that validate the requests and type the answers.
 */

export const PUBLISHED_BASE_PATH = '/api/v1/published';

/**
 * The execute body's fields in the words of the API's contract. execute-request.ts holds the rules; these are words for
 * callers (and, for the objects, the shape a refinement there checks), and a word for a field the schema no longer
 * has fails the build (refineProperties).
 */
const EXECUTE_FIELDS: Record<string, JsonSchema> = {
  input: {
    description: "Input data for the workflow's start node; `message`, when present, must be a string. Every key is kept",
    properties: { message: { type: 'string', description: 'The message, for workflows that take one' } },
  },
  user_id: { description: 'External user identifier: isolates memory between users (1-256 characters of well-formed Unicode)' },
  thread_id: {
    description:
      'Thread (session) identifier: continues a conversation with its history; generated when omitted (1-256 characters of ' +
      'well-formed Unicode)',
  },
  initial_memory: {
    description: "Key-value pairs written into the user's memory before the execution (keys 1-256 bytes of UTF-8; other keys are kept)",
  },
  callback_url: {
    description: 'Receives a POST with the status response when the execution finishes (signed with webhook_secret when given)',
  },
  webhook_secret: { description: 'Signs the callback with HMAC-SHA256 (Standard Webhooks headers); needs callback_url' },
  overrides: {
    description: "Node parameter overrides `{node_id: {param: value}}`, checked against the workflow's nodes and their parameters",
    additionalProperties: { type: 'object', description: "One node's parameters, by name", additionalProperties: true },
  },
};

const requests = requestBodyComponents({
  ExecuteRequest: executeRequestSchema,
  DecisionRequest: decisionRequestSchema,
});

/** Component names become the type names of callers' generated clients, so they stay as first published. */
const responses = schemaComponents('output', {
  WorkflowSummary: workflowSummarySchema,
  WorkflowList: workflowListSchema,
  WorkflowDetail: workflowDetailSchema,
  ExecutionStatus: executionStatusSchema,
  PendingApproval: pendingApprovalSchema,
  RunUsage: executionUsageSchema,
  Execution: executionViewSchema,
  ExecuteResult: executeResponseSchema,
  StopResult: stopResponseSchema,
  DecisionResult: decisionResponseSchema,
  Error: publishedErrorBodySchema,
  StartEvent: startDataSchema,
  TokenEvent: tokenDataSchema,
  ToolCallEvent: toolCallDataSchema,
  AgentHandoffEvent: agentHandoffDataSchema,
  NodeUpdateEvent: nodeUpdateDataSchema,
  ImageEvent: imageDataSchema,
  ErrorEvent: errorDataSchema,
  CompleteEvent: completeDataSchema,
  ResumeEvent: resumeDataSchema,
  StatusEvent: lifecycleStatusDataSchema,
  DecisionEvent: lifecycleDecisionDataSchema,
  StreamProbeEndEvent: streamProbeEndSchema,
});

/** Each named property gets the words (joined to any the schema has) and the shape given for it. */
function refineProperties(schema: JsonSchema, refinements: Record<string, JsonSchema>): JsonSchema {
  const properties = schema.properties as Record<string, JsonSchema>;
  for (const name of Object.keys(refinements)) if (!properties[name]) throw new Error(`No property ${name} to describe`);
  const refined = (name: string, property: JsonSchema) => {
    const refinement = refinements[name];
    if (!refinement) return property;
    const description = [refinement.description, property.description].filter((text) => typeof text === 'string').join('. ');
    return { ...property, ...refinement, description };
  };
  return {
    ...schema,
    properties: Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, refined(name, property)])),
  };
}

/** An execution's events on `/stream` and `/executions/{id}/stream` (README, Streaming). */
const EXECUTION_STREAM_EVENTS: [event: string, component: string, description: string][] = [
  ['start', 'StartEvent', 'The execution began (always id 1)'],
  ['token', 'TokenEvent', 'A fragment of text from a language model'],
  ['tool_call', 'ToolCallEvent', "An agent's tool call: started, then succeeded or failed"],
  ['agent_handoff', 'AgentHandoffEvent', 'Control passed to another agent'],
  ['node_update', 'NodeUpdateEvent', 'A node started, completed, waits, or an approval was decided'],
  ['image', 'ImageEvent', 'A generated image'],
  ['error', 'ErrorEvent', 'The execution failed (sent before its complete)'],
  ['complete', 'CompleteEvent', 'The execution finished, or paused at an approval (status interrupted): the stream ends'],
];

const RESUME_EVENT = sseEventSchema('resume', 'ResumeEvent', {
  withId: false,
  description:
    'The stream had to end early (its window is up, the log could not be read, or the client took nothing for 30 s while events ' +
    'waited): resume at resume_url, or with Last-Event-ID as EventSource does. Not part of the execution, so it has no id',
  retry: `Milliseconds EventSource waits before it reconnects (with Last-Event-ID): ${STREAM_RESUME_RETRY_MS}, the end being planned`,
});

/** The events of each stream, as components: what a generated client names them. */
const STREAM_EVENTS: Record<string, JsonSchema> = {
  RunStreamEvent: {
    description:
      "One server-sent event of an execution's stream (`POST /workflows/{workflow_id}/stream`, `GET " +
      '/executions/{execution_id}/stream`): `event` names it, `data` is its JSON',
    oneOf: [
      ...EXECUTION_STREAM_EVENTS.map(([event, component, description]) => sseEventSchema(event, component, { withId: true, description })),
      RESUME_EVENT,
    ],
  },
  LifecycleStreamEvent: {
    description: "One server-sent event of an execution's lifecycle (`GET /executions/{execution_id}/events`)",
    oneOf: [
      sseEventSchema('status', 'StatusEvent', {
        withId: true,
        description: "The execution's state: first at subscription, then at each change; a final status ends the stream",
      }),
      sseEventSchema('decision', 'DecisionEvent', { withId: true, description: 'An approval was answered' }),
      RESUME_EVENT,
    ],
  },
  // The probe's one event: a schema of its own, not a `oneOf` of one (Redocly: "use the schema directly").
  StreamProbeEvent: sseEventSchema('end', 'StreamProbeEndEvent', {
    withId: false,
    description: "The stream probe's one event, sent after the hold, just before the response ends: the probe as asked",
  }),
};

/** The probe's query parameters, from the schema that validates them (bounds and defaults). */
const probeQuery = schemaComponents('input', { StreamProbeQuery: streamProbeQuerySchema }).StreamProbeQuery!.properties as Record<
  string,
  JsonSchema
>;

const PROBE_PARAMETERS = [
  {
    name: 'bytes',
    in: 'query',
    description:
      'The size of the first write, in bytes: exactly this many, as one write (`:` and then spaces, the start of a comment line)',
    schema: probeQuery.bytes!,
  },
  {
    name: 'hold_ms',
    in: 'query',
    description: 'How long the function writes nothing after the first write, in milliseconds; the invocation lasts about this long',
    schema: probeQuery.hold_ms!,
  },
] as const;

const E = PUBLISHED_ERRORS;

const error = (description: string, examples: Record<string, unknown>, headers?: string[]): ResponseDoc => ({
  json: 'Error',
  description,
  examples,
  ...(headers ? { headers } : {}),
});

/** What every authenticated operation may answer (authentication and errors); the 403 names the route's own scope. */
function authenticated(routeId: string): Record<string, ResponseDoc> {
  const scope = routeById(routeId).scope;
  if (!scope) throw new Error(`Route ${routeId} has no scope`);
  return {
    '401': error('No Authorization header, or an invalid, revoked or expired key', { no_key: E.noKey, invalid_key: E.invalidKey }),
    '403': error('The key lacks the scope the operation needs', { missing_scope: E.missingScope(scope) }),
    '429': error(
      `Rate limit exceeded: ${MAX_REQUESTS_PER_MINUTE_PER_KEY} requests per minute per key, or the stage throttle`,
      { key_rate: E.rateLimited, stage_throttle: E.stageThrottle },
      ['Retry-After'],
    ),
    '500': error("Internal error (details only in the service's log)", { internal: E.internal }),
    '503': error(
      "A service the API depends on is unavailable or throttled, or a start's outcome is not known yet: retry the request as it is " +
        'after Retry-After seconds',
      { busy: E.unavailable },
      ['Retry-After'],
    ),
  };
}

const NO_PUBLICATION = error('The project has no active publication, or (with a body) the body is invalid: `detail` names the fields', {
  no_publication: E.noPublication,
});
const START_REFUSED = error(
  'The project has no active publication, or the body, the Idempotency-Key or (stream) Last-Event-ID is invalid: `detail` names the fields',
  {
    invalid_body: E.invalidBody,
    unknown_override: E.invalidOverrides,
    invalid_idempotency_key: E.invalidIdempotencyKey,
    no_publication: E.noPublication,
  },
);
const KEY_REUSED = error('The Idempotency-Key was used in the last 24 hours for a different request', { key_reused: E.keyReused });
const TOO_LARGE = error(`The body is larger than ${MAX_EXECUTE_BODY_BYTES} bytes`, { too_large: E.tooLarge });
const RESUME_REFUSED = error('Last-Event-ID or after is malformed, or past the last event of the execution', {
  past_the_end: E.invalidResumePoint,
});
const NO_EXECUTION = error('No such execution in this project', { no_execution: E.noExecution });
const NO_WORKFLOW = error('No such workflow in the active publication', { no_workflow: E.noWorkflow });
const DOCUMENT_THROTTLED = error('The stage throttle', { stage_throttle: E.stageThrottle }, ['Retry-After']);

/** A stream route's 429: besides the rate limits, its key's open streams, or the deployment's, are all open. */
function streamAuthenticated(routeId: string): Record<string, ResponseDoc> {
  return {
    ...authenticated(routeId),
    '429': error(
      `Rate limit exceeded (${MAX_REQUESTS_PER_MINUTE_PER_KEY} requests per minute per key, or the stage throttle), or too many streams ` +
        `open: the key's own limit (${DEFAULT_MAX_OPEN_STREAMS_PER_KEY} unless its operator set another) or the deployment's, all keys ` +
        'together. A stream holds its slot until it ends (at the latest at the end of its window, also when its reader left): retry ' +
        'after Retry-After seconds, or close a stream nobody reads',
      {
        key_rate: E.rateLimited,
        stage_throttle: E.stageThrottle,
        key_open_streams: E.keyOpenStreams,
        deployment_open_streams: E.deploymentOpenStreams,
      },
      ['Retry-After'],
    ),
  };
}
const STREAM_HEADERS = ['Cache-Control', 'X-Accel-Buffering'];

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  description:
    'Makes a retry safe: 1-255 printable ASCII characters. The same key with the same request within 24 hours answers about the ' +
    'execution the first one started instead of starting another (waiting for it to start, 503 past 20 seconds); the same key with a ' +
    'different request is refused with 422.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]{1,255}$' },
} as const;

const RESUME_PARAMETERS = [
  {
    name: 'Last-Event-ID',
    in: 'header',
    description: 'Resume after this event id (what EventSource sends when it reconnects); wins over `after`',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  {
    name: 'after',
    in: 'query',
    description: "Resume after this event id (the resume URL's form)",
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
] as const;

const ENDED = {
  description: 'The caller already has the last event of an execution that has ended: nothing more will come (EventSource stops here)',
};

/** The README's execute body, and one that continues a thread and seeds the user's memory. */
const EXECUTE_EXAMPLES = {
  message: { user_id: 'u1', input: { message: 'hello' } },
  thread_and_memory: { user_id: 'u1', thread_id: 'thread-42', input: { message: 'hello' }, initial_memory: { name: 'Ann' } },
};

const operations: Record<string, OperationDoc> = {
  PublishedOpenApi: {
    summary: 'This document',
    description: 'The OpenAPI 3.2 description of the Published Workflow API, its server the address it was fetched from. Needs no key.',
    tags: ['meta'],
    parameters: [IF_NONE_MATCH_PARAMETER],
    responses: { ...DOCUMENT_RESPONSES, '429': DOCUMENT_THROTTLED },
  },
  PublishedOpenApi31: {
    summary: 'This document as OpenAPI 3.1',
    description:
      'The same description for tools that read OpenAPI 3.1 but not 3.2: each event stream is described by `schema`, its event ' +
      'union. Needs no key.',
    tags: ['meta'],
    parameters: [IF_NONE_MATCH_PARAMETER],
    responses: { ...DOCUMENT_RESPONSES, '429': DOCUMENT_THROTTLED },
  },
  PublishedDocs: {
    summary: 'This reference, for reading',
    description:
      'A page that renders openapi-3.1.json with Redoc in the browser. It loads only from this API: the document and the script ' +
      'beside the page. Needs no key.',
    tags: ['meta'],
    responses: { '200': { description: 'The page', text: 'text/html' }, '429': DOCUMENT_THROTTLED },
  },
  PublishedDocsScript: {
    summary: 'The script of the reference page',
    description:
      "Redoc's standalone bundle, which the reference page loads; gzip-encoded when the request accepts it. Under the version the " +
      'page names (`v`) it may be kept for a year. Needs no key.',
    tags: ['meta'],
    parameters: [{ name: 'v', in: 'query', description: "The script's version, as the page names it", schema: { type: 'string' } }],
    responses: { '200': { description: 'The script', text: 'text/javascript' }, '429': DOCUMENT_THROTTLED },
  },
  PublishedListWorkflows: {
    summary: 'List the workflows of the active publication',
    description: "The workflows of the project's active publication, with the publication they belong to.",
    tags: ['workflows'],
    responses: {
      '200': { description: 'The workflows', json: 'WorkflowList' },
      '400': NO_PUBLICATION,
      ...authenticated('PublishedListWorkflows'),
    },
  },
  PublishedGetWorkflow: {
    summary: 'Workflow details',
    description: 'One workflow of the active publication: its nodes, and the parameters each one takes (what `overrides` may set).',
    tags: ['workflows'],
    responses: {
      '200': { description: 'The workflow', json: 'WorkflowDetail' },
      '400': NO_PUBLICATION,
      '404': NO_WORKFLOW,
      ...authenticated('PublishedGetWorkflow'),
    },
  },
  PublishedExecute: {
    summary: 'Run a workflow and wait for the result',
    description:
      `Starts the execution and answers when it settles (completed, failed, interrupted at an approval, cancelled). Once the execution ` +
      `has started the status line is sent at once and the JSON document follows, kept alive with leading whitespace; an execution ` +
      `still going after ${MAX_BLOCKING_EXECUTE_MS / MINUTE_MS} minutes is answered with its current status and poll_url.`,
    tags: ['executions'],
    parameters: [IDEMPOTENCY_KEY],
    requestBody: { schema: 'ExecuteRequest', required: true, examples: EXECUTE_EXAMPLES },
    responses: {
      '200': {
        description: 'The execution as it settled (or, past the wait, as it stands, with poll_url)',
        json: 'ExecuteResult',
        headers: ['X-Execution-Id', ['Content-Location', 'ExecutionLocation']],
        examples: {
          completed: {
            execution_id: EXECUTION_ID,
            thread_id: 'thread-42',
            workflow_id: 'echo',
            status: 'completed',
            output: 'Echo: hello',
            error: null,
            elapsed_time: 0.42,
            total_steps: 2,
            created_at: '2026-05-01T09:30:00.000Z',
            finished_at: '2026-05-01T09:30:00.420Z',
            pending_approval: null,
            usage: { model_calls: 1, input_tokens: 0, output_tokens: 2, tool_calls: 0, images: 0 },
          },
        },
      },
      '400': START_REFUSED,
      '404': NO_WORKFLOW,
      '413': TOO_LARGE,
      '422': KEY_REUSED,
      ...authenticated('PublishedExecute'),
    },
  },
  PublishedStreamWorkflow: {
    summary: 'Run a workflow and stream its events',
    description:
      'Starts the execution exactly as execute does (same body, same refusals as JSON before the stream opens), then streams its ' +
      'events until `complete`. A dropped connection resumes at GET /executions/{execution_id}/stream.',
    tags: ['executions'],
    parameters: [
      IDEMPOTENCY_KEY,
      {
        ...RESUME_PARAMETERS[0],
        description: 'With an Idempotency-Key that names an execution already: resume its stream after this event id',
      },
    ],
    requestBody: { schema: 'ExecuteRequest', required: true, examples: EXECUTE_EXAMPLES },
    responses: {
      '200': {
        description: 'Server-sent events: `id`, `event`, and `data` as one line of JSON; comment lines keep the connection alive',
        events: 'RunStreamEvent',
        streamExamples: STREAMS.run,
        headers: [...STREAM_HEADERS, 'X-Execution-Id', ['Content-Location', 'StreamLocation']],
      },
      '204': { ...ENDED, headers: ['X-Execution-Id', ['Content-Location', 'StreamLocation']] },
      '400': START_REFUSED,
      '404': NO_WORKFLOW,
      '413': TOO_LARGE,
      '422': KEY_REUSED,
      ...streamAuthenticated('PublishedStreamWorkflow'),
    },
  },
  PublishedGetExecution: {
    summary: 'Status and result of an execution (polling)',
    description: 'The execution as it stands: its status, output or error, the approval it waits for, and what it has spent.',
    tags: ['executions'],
    responses: {
      '200': { description: 'The execution', json: 'Execution' },
      '404': NO_EXECUTION,
      ...authenticated('PublishedGetExecution'),
    },
  },
  PublishedStreamExecution: {
    summary: "An execution's whole event stream, replayed and then live",
    description: 'The same events, ids and order as the stream that started the execution; resumes after Last-Event-ID or `after`.',
    tags: ['executions'],
    parameters: RESUME_PARAMETERS,
    responses: {
      '200': {
        description: 'Server-sent events until `complete`',
        events: 'RunStreamEvent',
        streamExamples: STREAMS.replay,
        headers: STREAM_HEADERS,
      },
      '204': ENDED,
      '400': RESUME_REFUSED,
      '404': NO_EXECUTION,
      ...streamAuthenticated('PublishedStreamExecution'),
    },
  },
  PublishedExecutionEvents: {
    summary: "Subscribe to an execution's lifecycle",
    description:
      "Subscribe-then-fetch: the first event is the execution's current status; an execution already finished gets that one event " +
      'and the stream closes.',
    tags: ['executions'],
    parameters: RESUME_PARAMETERS,
    responses: {
      '200': {
        description: 'Server-sent events until the final status',
        events: 'LifecycleStreamEvent',
        streamExamples: STREAMS.lifecycle,
        headers: STREAM_HEADERS,
      },
      '204': ENDED,
      '400': RESUME_REFUSED,
      '404': NO_EXECUTION,
      ...streamAuthenticated('PublishedExecutionEvents'),
    },
  },
  PublishedStopExecution: {
    summary: 'Stop an execution',
    description:
      'Only queued and running executions can be stopped; one waiting for an approval (interrupted) or finished answers 409. So ' +
      'does one a decision is resuming (approve or reject answered, or being answered), until its step has taken the decision ' +
      'up, which is in its log by then: a stop either comes before a decision (which then answers 409) or after it applied, ' +
      'never between its 200 and its `decision` event. The step takes a decision up within moments; stop again then.',
    tags: ['executions'],
    responses: {
      '200': { description: 'Stopped', json: 'StopResult' },
      '404': NO_EXECUTION,
      '409': error('The execution is neither queued nor running, or a decision on its approval is resuming it', {
        not_stoppable: E.notStoppable,
        resuming: E.resuming,
      }),
      ...authenticated('PublishedStopExecution'),
    },
  },
  PublishedStreamProbe: {
    summary: 'Measure whether small streamed writes reach the client at once',
    description:
      "For operators: tells whether this deployment's response streaming (Lambda through API Gateway) passes a small write on at " +
      'once or holds it until more bytes follow, ' +
      'which decides how much filler the event streams must send after a write that has to arrive. ' +
      'The function writes, as one write, exactly `bytes` bytes: `:` and `bytes`-1 spaces, the start of a comment line, with no newline. ' +
      'Then it writes nothing for `hold_ms`, ends the comment line, sends one `end` event and ends the response. None of the ' +
      'heartbeat or filler of the other streams is added. ' +
      'A client that has the first `bytes` bytes well before `hold_ms` has passed saw the write pass through unheld. ' +
      "Each probe is one invocation of a streaming function lasting about `hold_ms`, counted against the key's rate limit like any " +
      'request.',
    tags: ['meta'],
    parameters: PROBE_PARAMETERS,
    responses: {
      '200': {
        description: 'The first write (a comment clients skip), the hold, then the `end` event',
        events: 'StreamProbeEvent',
        streamExamples: STREAMS.probe,
        headers: STREAM_HEADERS,
      },
      '400': error('`bytes` or `hold_ms` is not a whole number within its bounds: `detail` names the parameter', {
        out_of_bounds: E.invalidProbe,
      }),
      ...streamAuthenticated('PublishedStreamProbe'),
    },
  },
  PublishedApprove: decision('PublishedApprove', 'Approve the pending step', "The execution resumes along the approval's `approved` edge."),
  PublishedReject: decision(
    'PublishedReject',
    'Reject the pending step',
    'The execution follows the `rejected` edge, or fails with the feedback as its error when there is none.',
  ),
};

function decision(routeId: string, summary: string, description: string): OperationDoc {
  const repeats =
    'A 200 means the decision applies: a stop that came first makes it 409. The same request again (the same decision and ' +
    'feedback) once the decision was delivered answers the same 200, also after the execution went on or finished, so a ' +
    'request whose answer was lost can simply be sent again; another decision on the answered approval is 409. While the ' +
    'execution awaits its next approval, a request decides that one, whatever its body.';
  return {
    summary,
    description: `${description} ${repeats}`,
    tags: ['executions'],
    requestBody: {
      schema: 'DecisionRequest',
      required: false,
      description: 'May be omitted: feedback defaults to empty',
      examples: { feedback: { feedback: 'ok' } },
    },
    responses: {
      '200': {
        description: 'The decision was delivered (now, or by the same request before); the execution goes on with it',
        json: 'DecisionResult',
      },
      '400': error('The body is invalid: `detail` names the fields', { invalid_body: E.invalidDecision }),
      '404': NO_EXECUTION,
      '409': error(
        'The execution is not waiting for an approval, the approval was already answered otherwise, it can no longer be ' +
          'answered (the execution has failed), or a stop ended the execution first',
        {
          not_waiting: E.notWaiting,
          already_answered: E.noLongerPending,
          stopped_first: E.stoppedFirst,
        },
      ),
      '413': TOO_LARGE,
      ...authenticated(routeId),
    },
  };
}

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
      operations,
      pathParameters: {
        workflow_id: {
          description: 'A workflow of the active publication',
          schema: { type: 'string', pattern: WORKFLOW_ID_PATTERN.source },
        },
        execution_id: { description: 'An execution of this project', schema: { type: 'string', pattern: EXECUTION_ID_PATTERN.source } },
      },
      schemas: {
        ...requests,
        ExecuteRequest: refineProperties(requests.ExecuteRequest!, EXECUTE_FIELDS),
        ...responses,
        ...STREAM_EVENTS,
      },
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
