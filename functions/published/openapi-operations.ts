import { DOCUMENT_RESPONSES, IF_NONE_MATCH_PARAMETER, schemaComponents, type JsonSchema, type OperationDoc } from '#shared/http/openapi.ts';
import { MAX_BLOCKING_EXECUTE_MS } from '#shared/limits.ts';
import { MINUTE_MS } from '#shared/time.ts';
import { EXECUTION_ID, PUBLISHED_ERRORS as E, publishedStreamExamples as STREAMS } from './openapi-examples.ts';
import {
  authenticated,
  DOCUMENT_THROTTLED,
  error,
  KEY_REUSED,
  NO_EXECUTION,
  NO_PUBLICATION,
  NO_WORKFLOW,
  RESUME_REFUSED,
  START_REFUSED,
  streamAuthenticated,
  TOO_LARGE,
} from './openapi-refusals.ts';
import { streamProbeQuerySchema } from './stream-probe.ts';

/* The operations of the Published Workflow API's document, by route id (functions/routes.ts). */

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

export const PUBLISHED_OPERATIONS: Readonly<Record<string, OperationDoc>> = {
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
      "The same description for tools that read OpenAPI 3.1 but not 3.2. A stream's `schema` is what an SSE client generated " +
      "from it hands over for each event, the event's `data` (`RunStreamEventData`, ...), or the body as text. Needs no key.",
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
    description: 'One workflow of the active publication: its name, its description, and when it was created and last updated.',
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
        streamExamples: STREAMS.start,
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
