import createClient, { type Client } from 'openapi-fetch';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { components, paths } from './published-api.d.ts';

/**
 * A typed client of the Published Workflow API: openapi-fetch over the types generated from the API's OpenAPI
 * document (`published-api.d.ts`), and `streamRun`, which streams a run to its `complete` and resumes a dropped
 * stream with `GET /executions/{id}/stream` and `Last-Event-ID`, never starting a second run.
 */

type Schemas = components['schemas'];

/** Each event of a run's stream (`POST /workflows/{id}/stream`, `GET /executions/{id}/stream`) with its `data`. */
interface RunEventData {
  start: Schemas['StartEvent'];
  token: Schemas['TokenEvent'];
  tool_call: Schemas['ToolCallEvent'];
  agent_handoff: Schemas['AgentHandoffEvent'];
  node_update: Schemas['NodeUpdateEvent'];
  image: Schemas['ImageEvent'];
  error: Schemas['ErrorEvent'];
  complete: Schemas['CompleteEvent'];
}

export type RunEvent = { [K in keyof RunEventData]: { id: number; event: K; data: RunEventData[K] } }[keyof RunEventData];
export type ExecuteRequest = Schemas['ExecuteRequest'];

export interface PublishedClientOptions {
  /** The API's URL without a trailing slash: the stack's `ApiUrl` output (`https://<id>.execute-api.<region>.amazonaws.com/prod`), or the twin's. */
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
  const client = createClient<paths>({ baseUrl: `${options.baseUrl.replace(/\/+$/, '')}${PUBLISHED_API_PATH}`, headers: { authorization }, fetch: fetchImpl });
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
  ) {
    super(`${status}: ${detail}`);
    this.name = 'PublishedApiError';
  }
}

export interface StreamRunOptions {
  /** Makes the start itself safe to retry (a retry with the same key and body is the same run). */
  idempotencyKey?: string;
  /** Every event of the run, each exactly once, in order (a resume never repeats one). */
  onEvent: (event: RunEvent) => void;
  /** How many resumes in a row may bring no new event before giving up (default 5). */
  maxResumes?: number;
  /** The pause before a resume, doubled after each that brought nothing (default 250 ms). */
  resumeDelayMs?: number;
  signal?: AbortSignal;
}

export interface StreamRunResult {
  executionId: string;
  lastEventId: number;
  /** The `complete` the stream ended with (`interrupted` at an approval: resume later with `GET /executions/{id}/stream`). */
  complete: Schemas['CompleteEvent'];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts a run with one `POST /workflows/{id}/stream` and reads its events until `complete`. When the connection
 * drops first, resumes with `GET /executions/{id}/stream` and `Last-Event-ID` (the execution id comes from the
 * `X-Execution-Id` header, sent before any event), and follows a `resume` event's `resume_url`: the POST is never
 * sent again, so a drop never starts a second run.
 */
export async function streamRun(client: PublishedClient, workflowId: string, body: ExecuteRequest, options: StreamRunOptions): Promise<StreamRunResult> {
  const started = await client.POST('/workflows/{workflow_id}/stream', {
    params: { path: { workflow_id: workflowId }, header: options.idempotencyKey === undefined ? undefined : { 'Idempotency-Key': options.idempotencyKey } },
    body,
    parseAs: 'stream',
    signal: options.signal,
  });
  const executionId = started.response.headers.get('x-execution-id') ?? undefined;
  if (!started.response.ok) throw apiError(started.response, started.error, executionId);
  if (!executionId) throw new PublishedApiError(started.response.status, 'The stream named no execution (X-Execution-Id)');

  let lastEventId = 0;
  let complete: Schemas['CompleteEvent'] | undefined;
  let resumeUrl: string | undefined;
  let response: Response | undefined = started.response;
  let fruitless = 0;
  const maxResumes = options.maxResumes ?? 5;
  for (;;) {
    if (response) {
      const before = lastEventId;
      resumeUrl = undefined;
      await readEvents(response, (message) => {
        if (message.event === 'resume') {
          resumeUrl = (JSON.parse(message.data) as Schemas['ResumeEvent']).resume_url;
          return;
        }
        const id = Number(message.id);
        if (!Number.isInteger(id) || id <= lastEventId || complete) return;
        lastEventId = id;
        const event = { id, event: message.event, data: JSON.parse(message.data) as unknown } as RunEvent;
        if (event.event === 'complete') complete = event.data;
        options.onEvent(event);
      });
      if (complete) return { executionId, lastEventId, complete };
      fruitless = lastEventId > before ? 0 : fruitless + 1;
    } else {
      fruitless += 1;
    }
    if (fruitless > maxResumes) throw new PublishedApiError(0, `The stream of execution ${executionId} dropped ${fruitless} times in a row without a new event`, executionId);
    if (fruitless > 0) await sleep((options.resumeDelayMs ?? 250) * 2 ** (fruitless - 1));
    options.signal?.throwIfAborted();
    response = await resume(client, executionId, lastEventId, resumeUrl, options.signal).catch((error: unknown) => {
      if (error instanceof PublishedApiError) throw error;
      return undefined; // the connection failed: try again
    });
  }
}

/** One resume request: the `resume` event's URL when the server sent one, else `GET /executions/{id}/stream`. */
async function resume(client: PublishedClient, executionId: string, lastEventId: number, resumeUrl: string | undefined, signal?: AbortSignal): Promise<Response | undefined> {
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
  if (response.status === 429 || response.status === 503) {
    await sleep(Math.min(Number(response.headers.get('retry-after') ?? 1), 30) * 1000);
    return undefined;
  }
  // 204: the run ended and its last event was already read, yet no `complete` came; anything else is refused.
  throw apiError(response, error, executionId);
}

/** Reads the event stream until it ends or drops; a drop is not an error here (the caller resumes), what `onMessage` throws is. */
async function readEvents(response: Response, onMessage: (message: EventSourceMessage) => void): Promise<void> {
  if (!response.body) return;
  const parser = createParser({ onEvent: onMessage });
  const decoder = new TextDecoder();
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch {
        return; // the connection dropped (undici's `TypeError: terminated`): what was parsed so far stands
      }
      if (chunk.done) return;
      parser.feed(decoder.decode(chunk.value, { stream: true }));
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

function apiError(response: Response, error: unknown, executionId?: string): PublishedApiError {
  const detail = typeof error === 'object' && error !== null && 'detail' in error && typeof error.detail === 'string' ? error.detail : response.statusText || 'no detail';
  return new PublishedApiError(response.status, detail, executionId);
}
