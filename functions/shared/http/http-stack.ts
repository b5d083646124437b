import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { emptyCostUnits, runMetered } from '../metering/cost-meter.ts';
import { ACCESS_LOG_LINE_BYTES, meterLogs, WEBHOOK_ACCESS_LOG_LINE_BYTES } from '../metering/log-meter.ts';
import { bufferedResponseBytes, chunkBytes, responseBodyBytes, streamedHeadBytes } from '../metering/data-transfer-meter.ts';
import { invocationMetering, settleUsage, usageMeterFromEnv } from '../metering/usage-settlement.ts';
import { DomainError } from '../errors.ts';
import { errorResponse, type ErrorBodyShape } from './http-errors.ts';
import { logger, publishMetricsAtEnd, publishRequestMetrics, tracer } from '../lambda/powertools.ts';
import { gatewayOf, routeGroupOf, type RouteGroup } from './route-groups.ts';
import { corsResponseHeaders, preflightResponse, type CorsPolicy } from './cors.ts';
import { asSentByGateway } from './gateway-compression.ts';
import { requestMethod, type GatewayRequest } from './gateway-event.ts';

/** What a route's function gets: either payload format (gateway-event.ts), as its route's API sends it. */
export type HttpRequest = GatewayRequest;
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
export function withHttpStack(
  route: HttpRoute,
  adapter: (request: HttpRequest, context: Context) => Promise<HttpResponse>,
  options: HttpHandlerOptions = {},
) {
  const { errorShape } = route;
  const usage = usageMeterFromEnv();
  const { cors } = options;
  const routeHeaders = (request: HttpRequest) => (cors ? corsResponseHeaders(cors.origins, request) : {});
  /**
   * The answer's bytes (data transfer out): a stream's so far and what its finish still sends, or a buffered answer
   * whole, as API Gateway sends it (compressed when the caller accepts it: gateway-compression.ts).
   */
  const restApi = gatewayOf(route) === 'restApi';
  const answerBytes = (request: HttpRequest, context: Context, response: HttpResponse) => {
    const streamed = streamedResponses.get(context);
    if (streamed) return streamed.sentBytes + streamed.bytesToFinish(response);
    const sent = withHeaders(response, routeHeaders(request));
    // Only a REST API compresses what a function answers; an HTTP API sends it as it is.
    return bufferedResponseBytes(restApi ? asSentByGateway(sent, header(request, 'accept-encoding')) : sent);
  };
  const accessLogBytes = restApi ? ACCESS_LOG_LINE_BYTES : WEBHOOK_ACCESS_LOG_LINE_BYTES;
  const metered = async (request: HttpRequest, context: Context): Promise<HttpResponse> => {
    const requestUnits = restApi ? { apiRequests: 1 } : { httpApiRequests: httpApiIncrements(rawBodyBytes(request)) };
    const metering = invocationMetering(context, { ...emptyCostUnits(), ...requestUnits, logBytes: accessLogBytes });
    let answer: HttpResponse | undefined;
    try {
      return (answer = await runMetered(metering, () => meterLogs(metering, () => adapter(request, context), restApi)));
    } catch (error) {
      // What the error mapper below will answer (errorResponse is pure): counted now, before the usage is written.
      answer = errorResponse(error, errorShape);
      throw error;
    } finally {
      if (answer) {
        const sent = answerBytes(request, context, answer);
        metering.units.dataTransferOutBytes += sent;
        // An HTTP API meters the larger of the request and its answer in 512 KB increments.
        if (!restApi) metering.units.httpApiRequests = Math.max(metering.units.httpApiRequests, httpApiIncrements(sent));
      }
      await settleUsage(usage, metering, context);
    }
  };
  const stack = middy(metered)
    .use(captureLambdaHandler(tracer))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(publishMetricsAtEnd())
    // Registered before the error mapper, so its onError sees the mapped status (middy runs onError last-in first).
    .use(requestMetrics(restApi ? routeGroupOf(route) : undefined))
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
  // A preflight is the browser asking, not a request of the API: no key, no metering, no request metrics.
  const answer = cors
    ? (request: HttpRequest, context: Context) =>
        requestMethod(request) === 'OPTIONS' ? Promise.resolve(preflightResponse(cors, request)) : stack(request, context)
    : stack;
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
function requestMetrics(group: RouteGroup | undefined): middy.MiddlewareObj<HttpRequest, HttpResponse> {
  let startedAt = 0;
  const publish = async (request: middy.Request<HttpRequest, HttpResponse>) => {
    // An HTTP API counts its requests, errors and latency itself (AWS/ApiGateway), which the webhooks' alarms read.
    if (group) publishRequestMetrics(group, request.response?.statusCode ?? 500, performance.now() - startedAt);
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
 * answer of the route carries (CORS), whichever path opens it. It honours the stream's backpressure: `write` says
 * whether the client keeps up (the stream's buffer is below its high-water mark), and `caughtUp` waits for it.
 */
class StreamedResponse {
  private body: Writable | undefined;
  readonly closed = new AbortController();
  /** What went to the client so far (data-transfer-meter.ts): the status and headers once open, then every body byte. */
  sentBytes = 0;

  constructor(
    private readonly responseStream: Writable,
    private readonly routeHeaders: Record<string, string>,
  ) {}

  open(prelude: Prelude): void {
    if (this.body) return;
    const headers = { ...this.routeHeaders, ...prelude.headers };
    this.body = lambdaStreamingRuntime().HttpResponseStream.from(this.responseStream, { ...prelude, headers });
    this.sentBytes += streamedHeadBytes({ ...prelude, headers });
    // A caller that went away ends the stream with an error: there is nobody left to answer.
    this.body.on('error', () => this.closed.abort());
    this.body.once('close', () => this.closed.abort());
  }

  private get writable(): boolean {
    return Boolean(this.body && !this.body.destroyed && !this.body.writableEnded);
  }

  /** Writes whatever the client's pace; answers false once the stream holds more than its high-water mark. */
  write(chunk: string | Buffer): boolean {
    if (!this.writable) return false;
    this.sentBytes += chunkBytes(chunk);
    return this.body!.write(chunk);
  }

  /** The client has not taken what was written yet: the stream's buffer is past its high-water mark. */
  get behind(): boolean {
    return this.writable && this.body!.writableNeedDrain;
  }

  /** Resolves true once the client has taken the backlog (at once when there is none), false once it is gone. */
  caughtUp(): Promise<boolean> {
    const body = this.body;
    if (!this.behind || !body) return Promise.resolve(this.writable);
    return new Promise((resolve) => {
      const settle = (result: boolean) => {
        body.off('drain', drained);
        this.closed.signal.removeEventListener('abort', gone);
        resolve(result);
      };
      const drained = () => settle(true);
      const gone = () => settle(false);
      body.once('drain', drained);
      this.closed.signal.addEventListener('abort', gone, { once: true });
    });
  }

  /**
   * Ends the body with `response`; if the status already went out, only its body is written (after whitespace at most).
   * With `withinMs`, a client that has not taken the rest by then is cut off (the stream is destroyed): a reader that
   * stopped reading never keeps the invocation running.
   */
  async finish(response: HttpResponse, withinMs?: number): Promise<void> {
    this.open(preludeOf(response));
    const body = this.body!;
    if (body.destroyed || body.writableEnded) return;
    const last = response.isBase64Encoded ? Buffer.from(response.body, 'base64') : Buffer.from(response.body ?? '', 'utf8');
    this.sentBytes += last.byteLength;
    body.end(last);
    const ended = finished(body).catch(() => undefined);
    if (withinMs === undefined) return ended;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, withinMs))))]);
    clearTimeout(timer);
    if (!body.writableFinished) body.destroy();
  }

  /** What `finish(response)` would still send: the whole response before the stream opened, its body after, nothing once ended. */
  bytesToFinish(response: HttpResponse): number {
    if (this.body && (this.body.destroyed || this.body.writableEnded)) return 0;
    const prelude = preludeOf(response);
    return (
      (this.body ? 0 : streamedHeadBytes({ ...prelude, headers: { ...this.routeHeaders, ...prelude.headers } })) +
      responseBodyBytes(response)
    );
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

/** What keeps a streamed JSON answer alive: how often, and how much whitespace each time. */
export interface JsonHeartbeat {
  intervalMs: number;
  /**
   * The deployment's padding (STREAM_FLUSH_PADDING_BYTES): each heartbeat is this much whitespace, so that a Lambda
   * that holds small writes sends it on at once; 0 sends a single space.
   */
  paddingBytes: number;
}

/**
 * For a streaming route: sends `statusCode` with `content-type: application/json` now, then JSON whitespace (legal
 * before a value) every `heartbeat.intervalMs` until `document` settles, so API Gateway's idle timeout and proxies
 * never see a silent response. Any JSON parser reads the body as the one document that follows. A heartbeat due while
 * the client has not taken the previous ones is left out: bytes are waiting for it already, and none pile up.
 * The status is final from here on: call it only once nothing can refuse the request any more.
 * `document` gets a signal that aborts when the caller goes away. `headers` go out with the status.
 */
export async function keepJsonResponseAlive(
  context: Context,
  statusCode: number,
  heartbeat: JsonHeartbeat,
  document: (callerGone: AbortSignal) => Promise<unknown>,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  const streamed = streamedResponses.get(context);
  if (!streamed) throw new Error('keepJsonResponseAlive is only for streaming routes');
  streamed.open({ statusCode, headers: { ...headers, 'content-type': 'application/json' } });
  const whitespace = Buffer.alloc(Math.max(1, heartbeat.paddingBytes), ' ');
  // The runtime sends the status line with the first bytes of the body: send them now.
  streamed.write(whitespace);
  const timer = setInterval(() => {
    if (!streamed.behind) streamed.write(whitespace);
  }, heartbeat.intervalMs);
  try {
    const response = jsonResponse(statusCode, await document(streamed.closed.signal));
    // The caller has its answer now: what the invocation still does (its usage write) no longer holds it up.
    await streamed.finish(response);
    return response;
  } finally {
    clearInterval(timer);
  }
}

export interface StreamSink {
  /** Writes now, whatever the client's pace: what the client must get (events). */
  write(text: string): void;
  /**
   * Writes only while the client keeps up, and answers whether it did: for what may be left out (heartbeats, filler),
   * so that a slow reader never makes the function hold a growing backlog.
   */
  writeIfKeepingUp(text: string): boolean;
  /** The client has not taken what was written yet (the response stream's buffer is past its high-water mark). */
  readonly behind: boolean;
  /** Resolves true once the client has taken the backlog (at once when there is none), false once it is gone. */
  caughtUp(): Promise<boolean>;
  /**
   * Once `produce` returns, the end of the response waits at most `ms` for the client to take the rest; then the
   * connection is cut. Unset, the end waits as long as the client takes.
   */
  endWithin(ms: number): void;
  /**
   * Aborts when the platform says the caller went away. Lambda never does (a stream whose caller left is served to its
   * end); the twin does only with TWIN_STREAM_CALLER_GONE=1.
   */
  readonly callerGone: AbortSignal;
}

/**
 * For a streaming route: answers 200 with `headers` now, and lets `produce` write the body;
 * the response ends when it returns. Call it once nothing can refuse the request any more: from here on,
 * an error can only end the stream.
 */
export async function serveStream(
  context: Context,
  headers: Record<string, string>,
  produce: (sink: StreamSink) => Promise<void>,
): Promise<HttpResponse> {
  const streamed = streamedResponses.get(context);
  if (!streamed) throw new Error('serveStream is only for streaming routes');
  streamed.open({ statusCode: 200, headers });
  let endWithinMs: number | undefined;
  await produce({
    write: (text) => void streamed.write(text),
    writeIfKeepingUp(text) {
      if (streamed.behind) return false;
      streamed.write(text);
      return true;
    },
    get behind() {
      return streamed.behind;
    },
    caughtUp: () => streamed.caughtUp(),
    endWithin: (ms) => void (endWithinMs = ms),
    callerGone: streamed.closed.signal,
  });
  const response = { statusCode: 200, headers, body: '' };
  // The stream ends when its last event is out, not after the invocation's own bookkeeping.
  await streamed.finish(response, endWithinMs);
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

/** How many requests an HTTP API bills for this many bytes: one per 512 KB begun, at least one. */
const httpApiIncrements = (bytes: number) => Math.max(1, Math.ceil(bytes / (512 * 1024)));

/** The body's size in bytes, without decoding it (the handler decodes it once, when it reads it). */
function rawBodyBytes(request: HttpRequest): number {
  if (request.body == null) return 0;
  return Buffer.byteLength(request.body, request.isBase64Encoded ? 'base64' : 'utf8');
}

export function rawBody(request: HttpRequest): Buffer {
  if (request.body == null) return Buffer.alloc(0);
  return Buffer.from(request.body, request.isBase64Encoded ? 'base64' : 'utf8');
}
