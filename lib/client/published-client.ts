import createClient, { type Client } from 'openapi-fetch';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { components, paths } from './published-api.d.ts';

/**
 * A typed client of the Published Workflow API: openapi-fetch over the types generated from the API's OpenAPI
 * document (`published-api.d.ts`); `streamRun`, which streams an execution to its `complete` and resumes a dropped stream
 * with `GET /executions/{id}/stream` and `Last-Event-ID`, never starting a second run; and `resumeRun`, which picks a
 * run's stream up after a given event (where a `streamRun` its caller aborted stood).
 */

type Schemas = components['schemas'];

/** Each event of an execution's stream (`POST /workflows/{id}/stream`, `GET /executions/{id}/stream`) with its `data`. */
interface StreamEventData {
  start: Schemas['StartEvent'];
  token: Schemas['TokenEvent'];
  tool_call: Schemas['ToolCallEvent'];
  agent_handoff: Schemas['AgentHandoffEvent'];
  node_update: Schemas['NodeUpdateEvent'];
  image: Schemas['ImageEvent'];
  error: Schemas['ErrorEvent'];
  complete: Schemas['CompleteEvent'];
}

export type StreamEvent = { [K in keyof StreamEventData]: { id: number; event: K; data: StreamEventData[K] } }[keyof StreamEventData];
export type ExecuteRequest = Schemas['ExecuteRequest'];

export interface PublishedClientOptions {
  /**
   * The API's URL without a trailing slash: the stack's `ApiUrl` output (`https://<id>.execute-api.<region>.amazonaws.com/prod`), or the
   * twin's.
   */
  baseUrl: string;
  /** A project's API key (`Authorization: Bearer <key>`). */
  key: string;
  /** The fetch to use (default: the global one). It receives a `Request`. */
  fetch?: (request: Request) => Promise<Response>;
}

export interface PublishedClient extends Client<paths> {
  /** Sends a GET for a URL the API handed out (a `resume` event's `resume_url`), with the key. */
  getUrl(url: string, headers?: Record<string, string>, signal?: AbortSignal): Promise<Response>;
}

export const PUBLISHED_API_PATH = '/api/v1/published';

export function createPublishedClient(options: PublishedClientOptions): PublishedClient {
  const fetchImpl = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const authorization = `Bearer ${options.key}`;
  const client = createClient<paths>({
    baseUrl: `${options.baseUrl.replace(/\/+$/, '')}${PUBLISHED_API_PATH}`,
    headers: { authorization },
    fetch: fetchImpl,
  });
  return Object.assign(client, {
    getUrl: (url: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
      fetchImpl(new Request(new URL(url, options.baseUrl), { headers: { ...headers, authorization }, signal })),
  });
}

export class PublishedApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly executionId?: string,
    /** The last event delivered before the failure, when the execution's stream had begun: resume after it. */
    readonly lastEventId?: number,
  ) {
    super(`${status}: ${detail}`);
    this.name = 'PublishedApiError';
  }
}

/** Where a caller stands in an execution's stream: `resumeRun(client, executionId, { lastEventId })` goes on from there. */
export interface RunPosition {
  /**
   * The execution, once the API has named it (`X-Execution-Id`, before any event). Undefined only when the start was cut
   * before its answer: send the same start again with its Idempotency-Key, which joins the execution if it began.
   */
  executionId: string | undefined;
  /** The last event handed to `onEvent` (0: none). */
  lastEventId: number;
}

/**
 * The caller's own signal ended the stream. Named `AbortError` as fetch's abort is; `position` is where it stood,
 * and no event after `position.lastEventId` was handed to `onEvent`, so a resume from there misses and repeats none.
 */
export class RunStreamAbortedError extends Error {
  override readonly name = 'AbortError';
  constructor(
    readonly position: RunPosition,
    reason: unknown,
  ) {
    super(
      `The stream was aborted ${
        position.executionId === undefined
          ? 'before the execution was named'
          : `at event ${position.lastEventId} of execution ${position.executionId}`
      }`,
      { cause: reason },
    );
  }
}

export interface FollowOptions {
  /** Every event of the execution, each exactly once, in order (a resume never repeats one). */
  onEvent: (event: StreamEvent) => void;
  /** How many resumes in a row may bring no new event before giving up (default 5). */
  maxResumes?: number;
  /** The pause before a resume, doubled after each that brought nothing (default 250 ms). */
  resumeDelayMs?: number;
  /** Ends the stream with a `RunStreamAbortedError` saying where it stood; the execution goes on. */
  signal?: AbortSignal;
}

export interface StreamRunOptions extends FollowOptions {
  /** Makes the start itself safe to retry (a retry with the same key and body is the same execution). */
  idempotencyKey?: string;
  /**
   * With `idempotencyKey`: the last event this caller already has of the key's run (sent as `Last-Event-ID`), so a
   * start sent again joins the execution after it instead of from event 1. Without the key it names no run, and is refused.
   */
  lastEventId?: number;
}

export interface ResumeRunOptions extends FollowOptions {
  /** The last event the caller has (a `RunStreamAbortedError`'s `position.lastEventId`); 0 or none: from the start. */
  lastEventId?: number;
}

export interface StreamRunResult {
  executionId: string;
  lastEventId: number;
  /**
   * The `complete` the stream ended with (`interrupted` at an approval: resume later with `resumeRun`). Resumed
   * after the execution's final event, it is that event, read again but not handed to `onEvent` a second time.
   */
  complete: Schemas['CompleteEvent'];
}

/** A pause that a caller's abort cuts short. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

function checkEventId(lastEventId: number): void {
  if (!Number.isSafeInteger(lastEventId) || lastEventId < 0)
    throw new TypeError(`lastEventId must be an event id (a whole number, 0 for none), got ${lastEventId}`);
}

/**
 * Starts an execution with one `POST /workflows/{id}/stream` and reads its events until `complete`. When the connection
 * drops first, resumes with `GET /executions/{id}/stream` and `Last-Event-ID` (the execution id comes from the
 * `X-Execution-Id` header, sent before any event), and follows a `resume` event's `resume_url`: the POST is never
 * sent again, so a drop never starts a second run. The caller's abort throws a `RunStreamAbortedError` with the
 * position to resume from.
 */
export async function streamRun(
  client: PublishedClient,
  workflowId: string,
  body: ExecuteRequest,
  options: StreamRunOptions,
): Promise<StreamRunResult> {
  const from = options.lastEventId ?? 0;
  checkEventId(from);
  if (from > 0 && options.idempotencyKey === undefined)
    throw new TypeError('lastEventId needs the idempotencyKey the execution was started with: without it the start is a new execution');
  const header = {
    ...(options.idempotencyKey === undefined ? {} : { 'Idempotency-Key': options.idempotencyKey }),
    ...(from > 0 ? { 'Last-Event-ID': String(from) } : {}),
  };
  const started = await client
    .POST('/workflows/{workflow_id}/stream', {
      params: { path: { workflow_id: workflowId }, header },
      body,
      parseAs: 'stream',
      signal: options.signal,
    })
    .catch((error: unknown) => {
      throw options.signal?.aborted
        ? new RunStreamAbortedError({ executionId: undefined, lastEventId: from }, options.signal.reason)
        : error;
    });
  const executionId = started.response.headers.get('x-execution-id') ?? undefined;
  // 204: the key's run has ended and `from` was its final event.
  if (started.response.status === 204 && executionId) return finalOf(client, executionId, from, options.signal);
  if (!started.response.ok) throw apiError(started.response, started.error, executionId);
  if (!executionId) throw new PublishedApiError(started.response.status, 'The stream named no execution (X-Execution-Id)');
  return follow(client, executionId, from, started.response, options);
}

/**
 * Streams an execution's events after `lastEventId` until `complete`, with `GET /executions/{id}/stream` and
 * `Last-Event-ID`, resuming as `streamRun` does when the connection drops: how a caller goes on after aborting a
 * `streamRun` (or an earlier `resumeRun`), from the position its `RunStreamAbortedError` carries.
 */
export function resumeRun(client: PublishedClient, executionId: string, options: ResumeRunOptions): Promise<StreamRunResult> {
  const from = options.lastEventId ?? 0;
  checkEventId(from);
  return follow(client, executionId, from, undefined, options);
}

/** Reads `first` (else asks for the stream) and resumes until `complete`, handing each event after `from` to `onEvent` once. */
async function follow(
  client: PublishedClient,
  executionId: string,
  from: number,
  first: Response | undefined,
  options: FollowOptions,
): Promise<StreamRunResult> {
  const { signal } = options;
  let lastEventId = from;
  let complete: Schemas['CompleteEvent'] | undefined;
  let resumeUrl: string | undefined;
  let response = first;
  let fruitless = 0;
  const maxResumes = options.maxResumes ?? 5;
  const aborted = () => new RunStreamAbortedError({ executionId, lastEventId }, signal?.reason);
  for (;;) {
    if (response === undefined) {
      const answer = await resume(client, executionId, lastEventId, resumeUrl, signal).catch((error: unknown) => {
        if (signal?.aborted) throw aborted();
        if (error instanceof PublishedApiError) throw error;
        return undefined; // the connection failed: try again
      });
      if (answer === 'ended') return finalOf(client, executionId, lastEventId, signal);
      response = answer;
    }
    if (response) {
      const before = lastEventId;
      resumeUrl = undefined;
      await readEvents(response, signal, (message) => {
        if (message.event === 'resume') {
          resumeUrl = (JSON.parse(message.data) as Schemas['ResumeEvent']).resume_url;
          return;
        }
        const id = Number(message.id);
        // After an abort, what was already received goes no further: the position stays the last event handed over.
        if (!Number.isInteger(id) || id <= lastEventId || complete || signal?.aborted) return;
        lastEventId = id;
        const event = { id, event: message.event, data: JSON.parse(message.data) as unknown } as StreamEvent;
        if (event.event === 'complete') complete = event.data;
        options.onEvent(event);
      });
      response = undefined;
      if (complete) return { executionId, lastEventId, complete };
      fruitless = lastEventId > before ? 0 : fruitless + 1;
    } else {
      fruitless += 1;
    }
    if (signal?.aborted) throw aborted();
    if (fruitless > maxResumes)
      throw new PublishedApiError(
        0,
        `The stream of execution ${executionId} dropped ${fruitless} times in a row without a new event`,
        executionId,
        lastEventId,
      );
    if (fruitless > 0) await pause((options.resumeDelayMs ?? 250) * 2 ** (fruitless - 1), signal);
    if (signal?.aborted) throw aborted();
  }
}

/**
 * One resume request: the `resume` event's URL when the server sent one, else `GET /executions/{id}/stream`.
 * `ended` when the API answers 204: the execution has ended and `lastEventId` was its final event.
 */
async function resume(
  client: PublishedClient,
  executionId: string,
  lastEventId: number,
  resumeUrl: string | undefined,
  signal?: AbortSignal,
): Promise<Response | 'ended' | undefined> {
  const lastEvent = lastEventId > 0 ? { 'Last-Event-ID': String(lastEventId) } : undefined;
  let response: Response;
  let error: unknown;
  if (resumeUrl !== undefined) {
    response = await client.getUrl(resumeUrl, lastEvent, signal);
    if (!response.ok) error = await response.json().catch(() => undefined);
  } else {
    const answer = await client.GET('/executions/{execution_id}/stream', {
      params: { path: { execution_id: executionId }, header: lastEvent },
      parseAs: 'stream',
      signal,
    });
    response = answer.response;
    error = answer.error;
  }
  if (response.status === 200) return response;
  if (response.status === 204) return 'ended';
  if (response.status === 429 || response.status === 503) {
    await pause(Math.min(Number(response.headers.get('retry-after') ?? 1), 30) * 1000, signal);
    return undefined;
  }
  throw apiError(response, error, executionId, lastEventId);
}

/**
 * The final `complete` of an ended run, for a caller that already had it (a 204): read again from the event
 * before it, so the result says how the execution ended, and not handed to `onEvent` again.
 */
async function finalOf(client: PublishedClient, executionId: string, lastEventId: number, signal?: AbortSignal): Promise<StreamRunResult> {
  const position = { executionId, lastEventId };
  const answer = await client
    .GET('/executions/{execution_id}/stream', {
      params: { path: { execution_id: executionId }, header: lastEventId > 1 ? { 'Last-Event-ID': String(lastEventId - 1) } : undefined },
      parseAs: 'stream',
      signal,
    })
    .catch((error: unknown) => {
      throw signal?.aborted ? new RunStreamAbortedError(position, signal.reason) : error;
    });
  if (answer.response.status !== 200) throw apiError(answer.response, answer.error, executionId, lastEventId);
  let complete: Schemas['CompleteEvent'] | undefined;
  await readEvents(answer.response, signal, (message) => {
    if (message.event === 'complete' && Number(message.id) === lastEventId) complete = JSON.parse(message.data) as Schemas['CompleteEvent'];
  });
  if (signal?.aborted) throw new RunStreamAbortedError(position, signal.reason);
  if (!complete)
    throw new PublishedApiError(
      0,
      `Execution ${executionId} has ended, but its final event ${lastEventId} could not be read again`,
      executionId,
      lastEventId,
    );
  return { executionId, lastEventId, complete };
}

/**
 * Reads the event stream until it ends, drops or `signal` aborts; a drop is not an error here (the caller resumes),
 * what `onMessage` throws is.
 */
async function readEvents(
  response: Response,
  signal: AbortSignal | undefined,
  onMessage: (message: EventSourceMessage) => void,
): Promise<void> {
  if (!response.body) return;
  const parser = createParser({ onEvent: onMessage });
  const decoder = new TextDecoder();
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  // A fetch that ignores the signal still stops here: cancelling ends the pending read.
  const stop = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch {
        return; // the connection dropped (undici's `TypeError: terminated`) or was aborted: what was parsed so far stands
      }
      if (chunk.done) return;
      parser.feed(decoder.decode(chunk.value, { stream: true }));
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    await reader.cancel().catch(() => undefined);
  }
}

function apiError(response: Response, error: unknown, executionId?: string, lastEventId?: number): PublishedApiError {
  const detail =
    typeof error === 'object' && error !== null && 'detail' in error && typeof error.detail === 'string'
      ? error.detail
      : response.statusText || 'no detail';
  return new PublishedApiError(response.status, detail, executionId, lastEventId);
}
