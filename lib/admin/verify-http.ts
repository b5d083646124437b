import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { CheckFailure, shortText, type VerifyContext } from './verify-check.ts';

/**
 * Plain fetch against the deployment's two APIs, as any caller sends it: no SDK, no client of the product's own, so
 * what `admin verify` sees is what an integrator sees.
 */

/**
 * For a request that creates something whose id only its answer names (an execution): it is not cut by SIGINT, so the
 * cleanup learns the id and can end the execution; the check stops right after it (its timeout still applies).
 */
export const UNINTERRUPTED: AbortSignal = new AbortController().signal;

/** Long enough for a cold function on AWS and for the twin's first compile on a loaded machine. */
const REQUEST_TIMEOUT_MS = 60_000;

export interface ApiAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The body as JSON, or undefined when it is not JSON. */
  json: unknown;
}

export interface ApiRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
}

/** `METHOD path` as the report shows it: the path without its secret segments (a link token, a key never appears). */
export function requestName(method: string, path: string): string {
  return `${method} ${path.replace(/\/whk_[^/]+/, '/<token>')}`;
}

/** One request to `<apiUrl><path>`, read to its end. A connection that fails is a CheckFailure naming where. */
export async function apiRequest(
  context: Pick<VerifyContext, 'apiUrl' | 'signal'>,
  path: string,
  request: ApiRequest = {},
): Promise<ApiAnswer> {
  const method = request.method ?? 'GET';
  let response: Response;
  let text: string;
  try {
    response = await openRequest(context, path, request);
    text = await response.text();
  } catch (error) {
    throw unreachable(context, method, path, error);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Sends the request and answers as soon as the headers are in (the body is the caller's to read). */
export async function openRequest(
  context: Pick<VerifyContext, 'apiUrl' | 'signal'>,
  path: string,
  request: ApiRequest = {},
  signal?: AbortSignal,
): Promise<Response> {
  const signals = [context.signal, AbortSignal.timeout(request.timeoutMs ?? REQUEST_TIMEOUT_MS), ...(signal ? [signal] : [])];
  return fetch(`${context.apiUrl}${path}`, {
    method: request.method ?? 'GET',
    headers: { ...(request.body === undefined ? {} : { 'content-type': 'application/json' }), ...request.headers },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
    signal: AbortSignal.any(signals),
  });
}

/** Why a request got no answer, as a failure line: the operator's interrupt is passed on as it is. */
export function unreachable(context: Pick<VerifyContext, 'apiUrl' | 'signal'>, method: string, path: string, error: unknown): Error {
  if (context.signal.aborted) return context.signal.reason instanceof Error ? context.signal.reason : new Error('interrupted');
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const why = (error as Error).name === 'TimeoutError' ? 'no answer in time' : (cause?.code ?? cause?.message ?? (error as Error).message);
  return new CheckFailure(
    `an answer to ${requestName(method, path)} from ${context.apiUrl}`,
    `no answer (${why})`,
    "Check that the deployment is up and reachable from here: locally that the twin runs (npm start); on AWS the stack's ApiUrl " +
      'output and your network',
  );
}

/** `404 {"message":"Not Found"}`: what came back, short (the expectation before it names the request). */
export function answered(answer: Pick<ApiAnswer, 'status' | 'text'>): string {
  return `${answer.status} ${shortText(answer.text)}`;
}

/** A field of a JSON object answer, if the answer is one. */
export function field(answer: Pick<ApiAnswer, 'json'>, name: string): unknown {
  return typeof answer.json === 'object' && answer.json !== null ? (answer.json as Record<string, unknown>)[name] : undefined;
}

export interface StreamedEvent {
  id: number | undefined;
  event: string;
  data: string;
}

/**
 * Reads a server-sent event stream, handing each event to `onEvent` until the stream ends or `onEvent` answers
 * `'stop'`, which drops the connection there (as a client that goes away). Comments (keep-alives, filler) are skipped.
 */
export async function readEventStream(response: Response, onEvent: (event: StreamedEvent) => 'stop' | void): Promise<'ended' | 'stopped'> {
  if (!response.body) return 'ended';
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let stopped = false;
  const parser = createParser({
    onEvent: (message: EventSourceMessage) => {
      if (stopped) return;
      const id = message.id === undefined || message.id === '' ? undefined : Number(message.id);
      if (onEvent({ id, event: message.event ?? 'message', data: message.data }) === 'stop') stopped = true;
    },
  });
  try {
    while (!stopped) {
      const chunk = await reader.read();
      if (chunk.done) return 'ended';
      parser.feed(decoder.decode(chunk.value, { stream: true }));
    }
    return 'stopped';
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
