import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { emptyCostUnits, runMetered } from '../metering/cost-meter.ts';
import { meterLogs } from '../metering/log-meter.ts';
import { invocationMetering, settleUsage, usageMeterFromEnv } from '../metering/usage-settlement.ts';
import { DomainError } from '../errors.ts';
import { errorResponse, type ErrorBodyShape } from './http-errors.ts';
import { STREAM_FLUSH_PADDING_BYTES } from '../limits.ts';
import { logger, publishMetricsAtEnd, publishRequestMetrics, tracer } from '../lambda/powertools.ts';
import { routeGroupOf, type RouteGroup } from './route-groups.ts';
import { corsResponseHeaders, preflightResponse, type CorsPolicy } from './cors.ts';

export type HttpRequest = APIGatewayProxyEvent;
export type HttpResponse = APIGatewayProxyResult;

/** What the stack needs of a route table entry (functions/routes.ts): the error body shape, whether it streams, its group. */
export interface HttpRoute {
  readonly errorShape: ErrorBodyShape;
  readonly streaming?: boolean;
  readonly path: string;
}

export interface HttpHandlerOptions {
  /**
   * Browsers on the listed origins may call the route (cors.ts): `OPTIONS` is answered as a preflight, and every
   * answer, refusals and streams included, carries the CORS headers. None: the route ignores browsers.
   */
  readonly cors?: CorsPolicy;
}

/**
 * Wraps a route's adapter function in the middy stack every API handler shares:
 * Powertools context/metrics/tracing, cost metering, and the one error-to-HTTP mapping.
 */
export function withHttpStack(route: HttpRoute, adapter: (request: HttpRequest, context: Context) => Promise<HttpResponse>, options: HttpHandlerOptions = {}) {
  const { errorShape } = route;
  const usage = usageMeterFromEnv();
  const metered = async (request: HttpRequest, context: Context): Promise<HttpResponse> => {
    const metering = invocationMetering(context, { ...emptyCostUnits(), apiRequests: 1 });
    try {
      return await runMetered(metering, () => meterLogs(metering, () => adapter(request, context)));
    } finally {
      await settleUsage(usage, metering, context);
    }
  };
  const stack = middy(metered)
    .use(captureLambdaHandler(tracer))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(publishMetricsAtEnd())
    // Registered before the error mapper, so its onError sees the mapped status (middy runs onError last-in first).
    .use(requestMetrics(routeGroupOf(route)))
    .use({
      onError: async (request) => {
        const { error } = request;
        if (error instanceof DomainError && error.statusCode < 500) {
          logger.info('request refused', { statusCode: error.statusCode, reason: error.message });
        } else {
          logger.error('request failed', error as Error);
        }
        request.response = errorResponse(error, errorShape);
      },
    });
  const { cors } = options;
  // A preflight is the browser asking, not a request of the API: no key, no metering, no request metrics.
  const answer = cors
    ? (request: HttpRequest, context: Context) => (request.httpMethod === 'OPTIONS' ? Promise.resolve(preflightResponse(cors, request)) : stack(request, context))
    : stack;
  const routeHeaders = (request: HttpRequest) => (cors ? corsResponseHeaders(cors.origins, request) : {});
  // Typed like middy's own streamified handlers: Lambda tells the two kinds apart by the runtime's marker, not the type.
  if (route.streaming) return streamified(answer, routeHeaders) as unknown as typeof stack;
  if (!cors) return stack;
  const buffered = async (request: HttpRequest, context: Context) => withHeaders(await answer(request, context), routeHeaders(request));
  return buffered as unknown as typeof stack;
}

/** `extra` under the response's own headers: a preflight's answer already says what it allows. */
function withHeaders(response: HttpResponse, extra: Record<string, string>): HttpResponse {
  return { ...response, headers: { ...extra, ...response.headers } };
}

/** Requests, server errors and latency per route group, which the operator's alarms watch. */
function requestMetrics(group: RouteGroup): middy.MiddlewareObj<HttpRequest, HttpResponse> {
  let startedAt = 0;
  const publish = async (request: middy.Request<HttpRequest, HttpResponse>) => {
    publishRequestMetrics(group, request.response?.statusCode ?? 500, performance.now() - startedAt);
  };
  return {
    before: async () => {
      startedAt = performance.now();
    },
    after: publish,
    onError: publish,
  };
}

/*
 * Streaming routes (Lambda response streaming behind a REST API with ResponseTransferMode STREAM). The whole
 * middy stack runs inside the streaming invocation, so metering, metrics and tracing cover the whole answer.
 * A route may open the response early (`keepJsonResponseAlive`); otherwise its returned response (or the
 * error response) is written when the stack is done, exactly like a buffered answer.
 */

interface Prelude {
  statusCode: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
}

/** What the Lambda Node.js runtime provides as the global `awslambda` (locally `lib/twin/lambda-streaming.ts`). */
interface LambdaStreamingRuntime {
  streamifyResponse<Handler>(handler: Handler): Handler;
  HttpResponseStream: { from(stream: Writable, prelude: Prelude): Writable };
}

function lambdaStreamingRuntime(): LambdaStreamingRuntime {
  const runtime = (globalThis as unknown as { awslambda?: LambdaStreamingRuntime }).awslambda;
  if (!runtime) throw new Error('Response streaming needs the Lambda runtime global awslambda');
  return runtime;
}

/**
 * One streaming invocation's response: the status and headers go out once, at `open`, with the headers every
 * answer of the route carries (CORS), whichever path opens it.
 */
class StreamedResponse {
  private body: Writable | undefined;
  readonly closed = new AbortController();

  constructor(
    private readonly responseStream: Writable,
    private readonly routeHeaders: Record<string, string>,
  ) {}

  open(prelude: Prelude): void {
    if (this.body) return;
    const headers = { ...this.routeHeaders, ...prelude.headers };
    this.body = lambdaStreamingRuntime().HttpResponseStream.from(this.responseStream, { ...prelude, headers });
    // A caller that went away ends the stream with an error: there is nobody left to answer.
    this.body.on('error', () => this.closed.abort());
    this.body.once('close', () => this.closed.abort());
  }

  write(chunk: string | Buffer): void {
    if (this.body && !this.body.destroyed && !this.body.writableEnded) this.body.write(chunk);
  }

  /** Ends the body with `response`; if the status already went out, only its body is written (after whitespace at most). */
  async finish(response: HttpResponse): Promise<void> {
    this.open(preludeOf(response));
    const body = this.body!;
    if (body.destroyed || body.writableEnded) return;
    body.end(response.isBase64Encoded ? Buffer.from(response.body, 'base64') : Buffer.from(response.body ?? '', 'utf8'));
    await finished(body).catch(() => undefined);
  }
}

function preludeOf(response: HttpResponse): Prelude {
  const headers = Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, value]) => [name, String(value)]));
  const multiValueHeaders = response.multiValueHeaders
    ? Object.fromEntries(Object.entries(response.multiValueHeaders).map(([name, values]) => [name, values.map(String)]))
    : undefined;
  return { statusCode: response.statusCode, headers, ...(multiValueHeaders ? { multiValueHeaders } : {}) };
}

const streamedResponses = new WeakMap<Context, StreamedResponse>();

function streamified(
  stack: (request: HttpRequest, context: Context) => Promise<HttpResponse>,
  routeHeaders: (request: HttpRequest) => Record<string, string>,
) {
  return lambdaStreamingRuntime().streamifyResponse(async (request: HttpRequest, responseStream: Writable, context: Context) => {
    const streamed = new StreamedResponse(responseStream, routeHeaders(request));
    streamedResponses.set(context, streamed);
    try {
      await streamed.finish(await stack(request, context));
    } finally {
      streamedResponses.delete(context);
    }
  });
}

/** Enough whitespace that Lambda sends it on at once rather than holding it (see STREAM_FLUSH_PADDING_BYTES). */
const JSON_KEEP_ALIVE = Buffer.alloc(STREAM_FLUSH_PADDING_BYTES, ' ');

/**
 * For a streaming route: sends `statusCode` with `content-type: application/json` now, then JSON whitespace (legal
 * before a value) every `heartbeatMs` until `document` settles, so API Gateway's idle timeout and proxies never see
 * a silent response. Any JSON parser reads the body as the one document that follows.
 * The status is final from here on: call it only once nothing can refuse the request any more.
 * `document` gets a signal that aborts when the caller goes away. `headers` go out with the status.
 */
export async function keepJsonResponseAlive(
  context: Context,
  statusCode: number,
  heartbeatMs: number,
  document: (callerGone: AbortSignal) => Promise<unknown>,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  const streamed = streamedResponses.get(context);
  if (!streamed) throw new Error('keepJsonResponseAlive is only for streaming routes');
  streamed.open({ statusCode, headers: { ...headers, 'content-type': 'application/json' } });
  // The runtime sends the status line with the first bytes of the body: send them now.
  streamed.write(JSON_KEEP_ALIVE);
  const heartbeat = setInterval(() => streamed.write(JSON_KEEP_ALIVE), heartbeatMs);
  try {
    const response = jsonResponse(statusCode, await document(streamed.closed.signal));
    // The caller has its answer now: what the invocation still does (its usage write) no longer holds it up.
    await streamed.finish(response);
    return response;
  } finally {
    clearInterval(heartbeat);
  }
}

export interface StreamSink {
  write(text: string): void;
  /** Aborts when the caller goes away. */
  readonly callerGone: AbortSignal;
}

/**
 * For a streaming route: answers 200 with `headers` now, and lets `produce` write the body;
 * the response ends when it returns. Call it once nothing can refuse the request any more: from here on,
 * an error can only end the stream.
 */
export async function serveStream(context: Context, headers: Record<string, string>, produce: (sink: StreamSink) => Promise<void>): Promise<HttpResponse> {
  const streamed = streamedResponses.get(context);
  if (!streamed) throw new Error('serveStream is only for streaming routes');
  streamed.open({ statusCode: 200, headers });
  await produce({ write: (text) => streamed.write(text), callerGone: streamed.closed.signal });
  const response = { statusCode: 200, headers, body: '' };
  // The stream ends when its last event is out, not after the invocation's own bookkeeping.
  await streamed.finish(response);
  return response;
}

export function jsonResponse(statusCode: number, body: unknown): HttpResponse {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

/** Header lookup is case-insensitive in HTTP; API Gateway passes names as the client sent them. */
export function header(request: HttpRequest, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(request.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

export function rawBody(request: HttpRequest): Buffer {
  if (request.body == null) return Buffer.alloc(0);
  return Buffer.from(request.body, request.isBase64Encoded ? 'base64' : 'utf8');
}
