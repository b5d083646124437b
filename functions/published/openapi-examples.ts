import type { StreamExample } from '#shared/http/openapi.ts';
import { BUSY_MESSAGE } from '#shared/http/http-errors.ts';
import { MAX_EXECUTE_BODY_BYTES, STREAM_PROBE_MAX_BYTES, STREAM_PROBE_MIN_BYTES, STREAM_RESUME_RETRY_MS } from '#shared/limits.ts';
import { RATE_LIMITS } from '#shared/rate-limits.ts';
import { SSE_HEARTBEAT, sseEvent } from './event-stream-response.ts';
import { probeEnd, probeOpening } from './stream-probe.ts';

/*
 * The examples of the Published Workflow API's document: answers as the API sends them, written out. Each refusal
 * has the words the code says for it (`{"detail"}`), and each stream the wire text of a run of the fixture workflows
 * (test/fixtures/workflows: echo, support-bot) with the product's own serializer. test/unit/openapi-documents.test.ts
 * holds every example to the document's schemas.
 */

export const EXECUTION_ID = '3f2a9c1e-8d4b-4c7a-9e21-5b6f0d8a7c43';
const THREAD_ID = 'thread-42';
const APPROVAL_ID = 'apr_6vbk-fTIynlQ';
const API_URL = 'https://abc123defg.execute-api.eu-west-1.amazonaws.com/prod/api/v1/published';

const detail = (text: string) => ({ detail: text });

/** One example per refusal, by cause; a missing scope is the operation's own. */
export const PUBLISHED_ERRORS = {
  noPublication: detail('The project has no active publication'),
  invalidBody: detail('Validation error: user_id: Invalid input: expected string, received undefined'),
  invalidOverrides: detail('Invalid overrides: overrides.greet: workflow echo has no node greet'),
  invalidIdempotencyKey: detail('Validation error: Idempotency-Key: must be 1 to 255 printable ASCII characters'),
  invalidDecision: detail('Validation error: feedback: Invalid input: expected string, received number'),
  invalidResumePoint: detail('Validation error: Last-Event-ID: is 42, but the last event of this execution is 12'),
  invalidProbe: detail(`Validation error: bytes: must be a whole number from ${STREAM_PROBE_MIN_BYTES} to ${STREAM_PROBE_MAX_BYTES}`),
  noKey: detail('Missing or malformed Authorization header; expected "Bearer <API key>"'),
  invalidKey: detail('Invalid or revoked API key'),
  missingScope: (scope: string) => detail(`API key lacks the scope ${scope}`),
  noWorkflow: detail('Workflow billing-bot not found'),
  noExecution: detail(`Execution ${EXECUTION_ID} not found`),
  notStoppable: detail(`Execution ${EXECUTION_ID} is completed; only queued or running executions can be stopped`),
  notWaiting: detail(`Execution ${EXECUTION_ID} is not waiting for an approval (status completed)`),
  noLongerPending: detail(`Approval ${APPROVAL_ID} is no longer pending`),
  resuming: detail(`Execution ${EXECUTION_ID} is taking up a decision on approval ${APPROVAL_ID}; stop it once it has resumed`),
  stoppedFirst: detail(`Execution ${EXECUTION_ID} was stopped before approval ${APPROVAL_ID} could be taken up`),
  tooLarge: detail(`Request body exceeds ${MAX_EXECUTE_BODY_BYTES} bytes`),
  keyReused: detail(
    'Idempotency-Key: was used in the last 24 hours for a different request (another workflow or body); send a new key for a new request',
  ),
  rateLimited: detail(RATE_LIMITS.requestsPerKeyPerMinute.refusal),
  keyOpenStreams: detail(
    'This key has 3 streams open, its limit (max_open_streams 3); one of them ends within 297 s at the latest (sooner when its ' +
      'reader is done): retry then, or close a stream nobody reads',
  ),
  deploymentOpenStreams: detail(
    'The API has 500 streams open, as many as this deployment serves at once; one of them ends within 12 s at the latest (sooner ' +
      'when its reader is done): retry then, or close a stream nobody reads',
  ),
  // API Gateway's own answer carries the message under both APIs' names (lib/cdk/gateway-responses.ts).
  stageThrottle: { error: 'Too Many Requests', detail: 'Too Many Requests' },
  internal: detail('Internal server error'),
  unavailable: detail(BUSY_MESSAGE),
} as const;

type Step = { id?: number; event: string; data: unknown; retry?: number } | typeof SSE_HEARTBEAT;

/** A stream example from what the API writes, in order: events (with the product's serializer) and heartbeats. */
function streamExample(summary: string, steps: readonly Step[]): StreamExample {
  return { summary, wire: steps.map((step) => (typeof step === 'string' ? step : sseEvent(step))).join('') };
}

/** The probe's answer to `bytes` and `hold_ms`, written by its own code: the opening comment, then `end`. */
function probeExample(probe: { bytes: number; hold_ms: number }): StreamExample {
  return { summary: `bytes=${probe.bytes}, hold_ms=${probe.hold_ms}`, wire: probeOpening(probe.bytes) + probeEnd(probe) };
}

const usage = (outputTokens: number) => ({ model_calls: 1, input_tokens: 0, output_tokens: outputTokens, tool_calls: 0, images: 0 });

/** `echo` with `{"input": {"message": "hello"}}`: one llm node, then the end node. */
const ECHO_EXECUTION = [
  { id: 1, event: 'start', data: { execution_id: EXECUTION_ID, thread_id: THREAD_ID, workflow_id: 'echo' } },
  { id: 2, event: 'node_update', data: { node_id: 'answer', type: 'llm', status: 'started' } },
  { id: 3, event: 'token', data: { content: 'Echo: ', node_id: 'answer' } },
  { id: 4, event: 'token', data: { content: 'hello', node_id: 'answer' } },
  { id: 5, event: 'node_update', data: { node_id: 'answer', type: 'llm', status: 'completed' } },
  { id: 6, event: 'node_update', data: { node_id: 'done', type: 'end', status: 'started' } },
  { id: 7, event: 'complete', data: { output: 'Echo: hello', execution_id: EXECUTION_ID, status: 'completed', usage: usage(2) } },
] as const;

const PENDING_APPROVAL = { approval_id: APPROVAL_ID, message: 'Send You said: refund?', node_id: 'confirm' };

/** `support-bot` with `{"input": {"message": "refund"}}`: the answer, then the approval it stops at. */
const SUPPORT_BOT_EXECUTION = [
  { id: 1, event: 'start', data: { execution_id: EXECUTION_ID, thread_id: THREAD_ID, workflow_id: 'support-bot' } },
  { id: 2, event: 'node_update', data: { node_id: 'answer', type: 'llm', status: 'started' } },
  { id: 3, event: 'token', data: { content: 'You ', node_id: 'answer' } },
  { id: 4, event: 'token', data: { content: 'said: ', node_id: 'answer' } },
  { id: 5, event: 'token', data: { content: 'refund', node_id: 'answer' } },
  { id: 6, event: 'node_update', data: { node_id: 'answer', type: 'llm', status: 'completed' } },
  { id: 7, event: 'node_update', data: { node_id: 'confirm', type: 'approval', status: 'started' } },
  { id: 8, event: 'node_update', data: { node_id: 'confirm', type: 'approval', status: 'waiting', approval_id: APPROVAL_ID } },
  {
    id: 9,
    event: 'complete',
    data: { output: null, execution_id: EXECUTION_ID, status: 'interrupted', usage: usage(3), pending_approval: PENDING_APPROVAL },
  },
] as const;

const lifecycleStatus = (status: string, rest: { output: unknown; pending_approval: unknown }) => ({
  execution_id: EXECUTION_ID,
  workflow_id: 'support-bot',
  thread_id: THREAD_ID,
  status,
  output: rest.output,
  error: null,
  pending_approval: rest.pending_approval,
});

export const publishedStreamExamples = {
  /** POST /workflows/{workflow_id}/stream */
  start: {
    completed: streamExample('An execution that completes', [SSE_HEARTBEAT, ...ECHO_EXECUTION]),
    interrupted: streamExample('An execution that stops at an approval', [SSE_HEARTBEAT, ...SUPPORT_BOT_EXECUTION]),
  },
  /** GET /executions/{execution_id}/stream */
  replay: {
    after_3: streamExample('Resumed with Last-Event-ID: 3', [SSE_HEARTBEAT, ...ECHO_EXECUTION.slice(3)]),
    time_limit: streamExample('A stream that reached the end of its window while the execution waited an hour: resume at resume_url', [
      SSE_HEARTBEAT,
      { id: 1, event: 'start', data: { execution_id: EXECUTION_ID, thread_id: THREAD_ID, workflow_id: 'follow-up' } },
      { id: 2, event: 'node_update', data: { node_id: 'pause', type: 'wait', status: 'started' } },
      { id: 3, event: 'node_update', data: { node_id: 'pause', type: 'wait', status: 'waiting', seconds: 3600 } },
      SSE_HEARTBEAT,
      {
        event: 'resume',
        data: { last_event_id: 3, resume_url: `${API_URL}/executions/${EXECUTION_ID}/stream?after=3`, reason: 'time_limit' },
        retry: STREAM_RESUME_RETRY_MS,
      },
    ]),
  },
  /** GET /executions/{execution_id}/events */
  lifecycle: {
    approved: streamExample('Subscribed while the execution waited for its approval, which was then approved', [
      SSE_HEARTBEAT,
      { id: 9, event: 'status', data: lifecycleStatus('interrupted', { output: null, pending_approval: PENDING_APPROVAL }) },
      SSE_HEARTBEAT,
      {
        id: 10,
        event: 'decision',
        data: {
          execution_id: EXECUTION_ID,
          approval_id: APPROVAL_ID,
          node_id: 'confirm',
          decision: 'approved',
          feedback: 'ok',
          status: 'running',
        },
      },
      { id: 12, event: 'status', data: lifecycleStatus('completed', { output: 'You said: refund', pending_approval: null }) },
    ]),
  },
  /** GET /diagnostics/stream-probe?bytes=16&hold_ms=2000 */
  probe: {
    bytes_16: probeExample({ bytes: 16, hold_ms: 2000 }),
  },
} satisfies Record<string, Record<string, StreamExample>>;
