import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult } from 'aws-lambda';
import { PayloadTooLargeError, RequestTimeoutError } from '#shared/errors.ts';
import { errorResponse } from '#shared/http/http-errors.ts';
import { GATEWAY_MESSAGES, GATEWAY_RETRY_AFTER_SECONDS, gatewayCorsHeaders, gatewayErrorBody } from '#lib/cdk/gateway-responses.ts';
import { CORS_ALLOWED_ORIGINS_ENV, corsResponseHeaders, parseCorsOrigins, servesBrowsers } from '#shared/http/cors.ts';
import { MAX_REQUEST_BODY_BYTES } from '#shared/limits.ts';
import { BINARY_MEDIA_TYPES, HTTP_API_TIMEOUT_SECONDS, routeTimeoutSeconds, type GatewayKind, type Route } from '#functions/routes.ts';
import { asSentByGateway } from '#shared/http/gateway-compression.ts';
import { isBinaryMediaType, toProxyEvent, type RequestTarget } from './api-gateway-event.ts';
import { DEFAULT_ROUTE_KEY, toHttpApiEvent } from './http-api-event.ts';
import { httpApiAnswer, httpApiResult, HTTP_API_MAX_BODY_BYTES, HTTP_API_MESSAGES } from './http-api-answers.ts';
import { LocalResponseStream } from './lambda-streaming.ts';
import { LambdaInvokeError, type InvocationTrace } from './lambda/function-host.ts';

/** A route's function as API Gateway invokes it (a LocalLambda on the twin). */
export interface RouteFunction {
  /**
   * `body`: the request's bytes, which the function's runtime puts into the event's `body` (null until then).
   * `trace`: filled in for the request's log line, when the twin shows one.
   */
  invoke(event: APIGatewayProxyEvent | APIGatewayProxyEventV2, body?: Uint8Array, trace?: InvocationTrace): Promise<unknown>;
  invokeStreaming(event: APIGatewayProxyEvent, stream: LocalResponseStream, body?: Uint8Array, trace?: InvocationTrace): Promise<void>;
}

/** A request the API server answered, as its response ended (lib/twin/twin-log.ts writes its line). */
export interface ServedApiRequest {
  method: string;
  /** As the client sent it, query included: whoever shows it must cut the secrets in it. */
  url: string;
  /** Undefined when the response ended before its status went out. */
  status: number | undefined;
  /** The route's function, when it was invoked; undefined for the gateway's own answers and refused bodies. */
  functionName: string | undefined;
  /** The invocation started the function's environment. */
  cold: boolean;
  streaming: boolean;
  /** False when the connection closed before the response's end: the client left, or a stream limit cut it. */
  finished: boolean;
  /** From the request's arrival to the response's end. */
  durationMs: number;
}

/** What serve() learns about a request for its log line. */
interface RequestWatch {
  functionName?: string;
  streaming: boolean;
  trace: InvocationTrace;
}

export interface BoundRoute {
  route: Route;
  fn: RouteFunction;
}

interface CompiledRoute extends BoundRoute {
  pattern: RegExp;
  parameterNames: string[];
}

/** API Gateway's own answer (a gateway response) with `status` and `message`, and the headers every gateway response carries. */
const gatewayAnswer = (statusCode: number, message: string, headers: Record<string, string> = {}): APIGatewayProxyResult => ({
  statusCode,
  // Every 5xx of the gateway says when to retry, as the DEFAULT_5XX gateway response CDK writes.
  headers: {
    ...headers,
    ...(statusCode >= 500 ? { 'retry-after': String(GATEWAY_RETRY_AFTER_SECONDS) } : {}),
    'content-type': 'application/json',
  },
  body: gatewayErrorBody(message),
});

function compile(bound: BoundRoute): CompiledRoute {
  const parameterNames: string[] = [];
  const source = bound.route.path
    .split('/')
    .map((segment) => {
      const parameter = /^\{(\w+)\}$/.exec(segment);
      if (!parameter) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      parameterNames.push(parameter[1]!);
      return '([^/]+)';
    })
    .join('/');
  return { ...bound, pattern: new RegExp(`^${source}$`), parameterNames };
}

function send(response: ServerResponse, result: APIGatewayProxyResult, close = false): void {
  if (response.headersSent) return;
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) headers[name] = values.map(String);
  if (close) headers.connection = 'close';
  const body = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : Buffer.from(result.body ?? '', 'utf8');
  // A buffered answer goes out framed by its length, as API Gateway frames it (the payload's, compressed or not);
  // a 204 or 304 has no content, and HTTP forbids it a length of 0.
  for (const name of Object.keys(headers)) if (name.toLowerCase() === 'content-length') delete headers[name];
  if (result.statusCode !== 204 && result.statusCode !== 304) headers['Content-Length'] = String(body.byteLength);
  response.writeHead(result.statusCode, headers);
  response.end(body);
}

/**
 * Reads the body the way the webhook API's limits require (functions/inbound/README.md#the-contract-in-brief): at most
 * 1 MiB (413 as soon as more arrives) and within the transfer time (408). Answers undefined once it has already answered the request
 * itself.
 */
function readBody(
  request: IncomingMessage,
  response: ServerResponse,
  route: Route,
  bodyTimeoutMs: number,
  refusalHeaders: Record<string, string>,
): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const refuse = (error: Error) => {
      const refusal = errorResponse(error, route.errorShape);
      send(response, { ...refusal, headers: { ...refusalHeaders, ...refusal.headers } }, true);
      request.unpipe();
      request.removeAllListeners('data');
      request.resume();
      response.once('finish', () => request.socket.destroySoon());
      resolve(undefined);
    };
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > MAX_REQUEST_BODY_BYTES) return refuse(new PayloadTooLargeError('Request body exceeds 1 MiB'));
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      refuse(new RequestTimeoutError('Request body was not received within 30 seconds'));
    }, bodyTimeoutMs);
    request.on('data', (chunk: Buffer) => {
      if (settled) return;
      received += chunk.byteLength;
      if (received > MAX_REQUEST_BODY_BYTES) {
        settled = true;
        clearTimeout(timer);
        refuse(new PayloadTooLargeError('Request body exceeds 1 MiB'));
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    request.on('error', () => {
      settled = true;
      clearTimeout(timer);
      resolve(undefined);
    });
  });
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export interface ApiServerOptions {
  /**
   * Which API Gateway API it stands in for: a REST API (payload 1.0, stage path, gateway responses, compression) or an
   * HTTP API (payload 2.0, `$default` stage, its own fixed answers, no compression).
   * @default 'restApi'
   */
  gateway?: GatewayKind;
  /** An HTTP API's `$default` route: every request no route matches. Without it the HTTP API answers 404 itself. */
  defaultRoute?: BoundRoute;
  /**
   * An HTTP API's integration timeout (its maximum, 30 s: HTTP_API_TIMEOUT_SECONDS); shorter only where a test shows it.
   * @default 30 000
   */
  httpApiTimeoutMs?: number;
  bodyTimeoutMs: number;
  /** The deployed stage (`prod`): `/<stage>/api/...` is the AWS-shaped URL; the unprefixed one keeps working locally. */
  stage: string;
  /** REST response streaming ends a response after this long without a byte (5 minutes on a REGIONAL endpoint). */
  streamIdleTimeoutMs: number;
  /** Every request, as its response ends. Without it the server keeps no clock and no record per request. */
  onServed?: (served: ServedApiRequest) => void;
}

function targetOf(pathname: string, stage: string): RequestTarget {
  const prefix = `/${stage}`;
  if (pathname.startsWith(`${prefix}/`)) return { stage, path: pathname.slice(prefix.length), requestPath: pathname };
  // Like a custom domain mapped without a base path: the path is the same in both places.
  return { stage, path: pathname, requestPath: pathname };
}

/**
 * Serves the route table over HTTP, invoking each handler with the proxy event API Gateway would send.
 * `CORS_ALLOWED_ORIGINS` (cors.ts) is read here as the CDK stack reads its `corsAllowedOrigins` context: with origins, `OPTIONS`
 * on a browser-serving route's resource goes to that route's function, as the OPTIONS method CDK adds does, and the
 * gateway's own answers carry the gateway responses' CORS headers (with several origins none, whatever the caller's
 * `Origin`). The functions get the same variable.
 */
export function createApiServer(boundRoutes: BoundRoute[], options: ApiServerOptions): Server {
  const compiled = boundRoutes.map(compile);
  const httpApi = options.gateway === 'httpApi';
  // An HTTP API has no CORS unless configured, and the webhook API configures none: OPTIONS is a request like any other.
  const corsAllowedOrigins = httpApi ? [] : parseCorsOrigins(process.env[CORS_ALLOWED_ORIGINS_ENV], CORS_ALLOWED_ORIGINS_ENV);
  // The gateway responses' headers: the same for every request (none with several origins), as CDK writes them.
  const fromGateway = gatewayCorsHeaders(corsAllowedOrigins);
  const { onServed } = options;
  // Deliberately not awaited: Node ignores a request listener's result; serve() answers each request itself (a 502 if the handler fails).
  const server = createServer(
    (request, response) => void serve(request, response, onServed ? watch(request, response, onServed) : undefined),
  );
  // The body deadline is ours (408 in the route's own error shape); Node's own request timeout would answer first otherwise.
  server.requestTimeout = 0;
  return server;

  async function serve(request: IncomingMessage, response: ServerResponse, watched: RequestWatch | undefined): Promise<void> {
    // Node would serve a request with two Host lines (keeping the first); HTTP/1.1 (RFC 9112) requires a 400.
    if (hostLines(request) > 1) {
      request.resume();
      send(response, httpApi ? httpApiAnswer(400, 'Bad Request') : gatewayAnswer(400, 'Bad Request'), true);
      return;
    }
    const url = new URL(request.url ?? '/', 'http://localhost');
    // An HTTP API's `$default` stage has no path; a REST API's stage prefixes the path.
    const target = httpApi ? { stage: '$default', path: url.pathname, requestPath: url.pathname } : targetOf(url.pathname, options.stage);
    // A REST API routes `/resource/` to `/resource`'s method (the event's path keeps the slash); an HTTP API does not.
    const routed = !httpApi && target.path.length > 1 && target.path.endsWith('/') ? target.path.slice(0, -1) : target.path;
    let match: { route: CompiledRoute; values: string[] } | undefined;
    for (const candidate of compiled) {
      const values = candidate.pattern.exec(routed);
      if (values && candidate.route.method === request.method) match = { route: candidate, values: values.slice(1) };
    }
    // CDK gives each browser-serving resource one OPTIONS method, integrated with the first route's function there.
    if (!match && request.method === 'OPTIONS' && corsAllowedOrigins.length > 0) {
      for (const candidate of compiled) {
        const values = candidate.pattern.exec(routed);
        if (values && servesBrowsers(candidate.route)) {
          match = { route: candidate, values: values.slice(1) };
          break;
        }
      }
    }
    if (!match && httpApi && options.defaultRoute) {
      return serveHttpApi(request, response, url, { ...options.defaultRoute, routeKey: DEFAULT_ROUTE_KEY }, watched);
    }
    if (!match) {
      request.resume();
      // A path or method the API has no resource for (the REST API's gateway response maps it to 404).
      send(
        response,
        httpApi ? httpApiAnswer(404, HTTP_API_MESSAGES.notFound) : gatewayAnswer(404, GATEWAY_MESSAGES.unknownRoute, fromGateway),
      );
      return;
    }
    if (httpApi) {
      const { route, fn, parameterNames } = match.route;
      const pathParameters = Object.fromEntries(parameterNames.map((name, i) => [name, safeDecode(match.values[i] ?? '')]));
      const routeKey = `${route.method} ${route.path}`;
      return serveHttpApi(request, response, url, { route, fn, routeKey, pathParameters }, watched);
    }
    const { route: compiledRoute, values } = match;
    // On AWS most oversized bodies reach the function, which refuses them with its own CORS headers.
    const fromFunction =
      corsAllowedOrigins.length > 0 && servesBrowsers(compiledRoute.route)
        ? corsResponseHeaders(corsAllowedOrigins, { headers: { origin: request.headers.origin } })
        : {};
    const body = await readBody(request, response, compiledRoute.route, options.bodyTimeoutMs, fromFunction);
    if (!body) return;
    const pathParameters = Object.fromEntries(compiledRoute.parameterNames.map((name, i) => [name, safeDecode(values[i] ?? '')]));
    const sent = body.byteLength > 0 ? body : undefined;
    const binary = sent !== undefined && isBinaryMediaType(request.headers['content-type'], BINARY_MEDIA_TYPES);
    const event = toProxyEvent(request, url, target, compiledRoute.route.path, pathParameters, binary);
    const { route, fn } = compiledRoute;
    if (watched) {
      watched.functionName = route.functionId ?? route.id;
      watched.streaming = Boolean(route.streaming);
    }
    try {
      if (route.streaming) {
        const stream = new LocalResponseStream(response, {
          idleTimeoutMs: options.streamIdleTimeoutMs,
          totalTimeoutMs: routeTimeoutSeconds(route) * 1000,
        });
        await fn.invokeStreaming(event, stream, sent, watched?.trace);
      } else {
        const timeout = gatewayAnswer(504, GATEWAY_MESSAGES.integrationTimeout, fromGateway);
        const result = proxyResult(
          await withIntegrationTimeout(() => fn.invoke(event, sent, watched?.trace), routeTimeoutSeconds(route) * 1000, timeout),
        );
        // The API's minimumCompressionSize (lib/cdk/constructs/api.ts): buffered answers only, never a stream.
        send(response, asSentByGateway(result, acceptEncoding(event)));
      }
    } catch (error) {
      // What API Gateway answers when the Lambda integration itself fails.
      reportInvokeFailure(route, error);
      // A streaming handler may fail after its status went out: cut the response as Lambda would.
      if (response.headersSent) return void response.destroy();
      send(response, gatewayAnswer(502, GATEWAY_MESSAGES.integrationFailure, fromGateway));
    }
  }

  /** A request to the HTTP API: its limits, its 2.0 event, its reading of the function's result, its own answers. */
  async function serveHttpApi(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    target: BoundRoute & { routeKey: string; pathParameters?: Record<string, string> },
    watched: RequestWatch | undefined,
  ): Promise<void> {
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > HTTP_API_MAX_BODY_BYTES) {
      request.resume();
      send(response, httpApiAnswer(413, HTTP_API_MESSAGES.payloadTooLarge), true);
      return;
    }
    const body = await readBody(request, response, target.route, options.bodyTimeoutMs, {});
    if (!body) return;
    const sent = body.byteLength > 0 ? body : undefined;
    const event = toHttpApiEvent(request, url, {
      routeKey: target.routeKey,
      pathParameters: target.pathParameters,
      hasBody: sent !== undefined,
    });
    if (watched) {
      watched.functionName = target.route.functionId ?? target.route.id;
      watched.streaming = false;
    }
    try {
      const timeout = httpApiAnswer(503, HTTP_API_MESSAGES.integrationTimeout);
      const result = await withIntegrationTimeout(
        () => target.fn.invoke(event, sent, watched?.trace),
        options.httpApiTimeoutMs ?? HTTP_API_TIMEOUT_SECONDS * 1000,
        timeout,
      );
      send(response, result === timeout ? timeout : httpApiResult(result));
    } catch (error) {
      reportInvokeFailure(target.route, error);
      send(response, httpApiAnswer(500, HTTP_API_MESSAGES.integrationFailure));
    }
  }
}

/** Lambda's own report of a failed invocation is one line; the function logged its own error already. */
function reportInvokeFailure(route: Route, error: unknown): void {
  if (error instanceof LambdaInvokeError) console.error(`handler ${route.id} failed: ${error.name}: ${error.message}`);
  else console.error(`handler ${route.id} threw`, error);
}

/** How many Host header lines the request has (Node's `headers` keeps one; its raw headers keep them all). */
function hostLines(request: IncomingMessage): number {
  let count = 0;
  for (let i = 0; i < request.rawHeaders.length; i += 2) if (request.rawHeaders[i]!.toLowerCase() === 'host') count++;
  return count;
}

/** The Accept-Encoding the function saw in its event, which the gateway compresses by and the function meters by. */
function acceptEncoding(event: APIGatewayProxyEvent): string | undefined {
  return Object.entries(event.headers).find(([name]) => name.toLowerCase() === 'accept-encoding')?.[1];
}

/** Reports the request once its response has ended, however it ended (a streamed response may run for minutes). */
function watch(request: IncomingMessage, response: ServerResponse, onServed: (served: ServedApiRequest) => void): RequestWatch {
  const startedAt = performance.now();
  const watched: RequestWatch = { streaming: false, trace: { cold: false } };
  response.once('close', () =>
    onServed({
      method: request.method ?? '-',
      url: request.url ?? '/',
      status: response.headersSent ? response.statusCode : undefined,
      functionName: watched.functionName,
      cold: watched.trace.cold,
      streaming: watched.streaming,
      finished: response.writableFinished,
      durationMs: performance.now() - startedAt,
    }),
  );
  return watched;
}

/** A Lambda proxy integration accepts only a result with a numeric status code; anything else is a 502. */
function proxyResult(result: unknown): APIGatewayProxyResult {
  const candidate = result as Partial<APIGatewayProxyResult> | null;
  if (!candidate || typeof candidate !== 'object' || typeof candidate.statusCode !== 'number') {
    throw new Error('Malformed Lambda proxy response');
  }
  return { ...candidate, body: typeof candidate.body === 'string' ? candidate.body : '' } as APIGatewayProxyResult;
}

/** API Gateway gives up on a non-streaming integration after 29 s and answers 504, whatever the function does next. */
async function withIntegrationTimeout(
  invoke: () => Promise<unknown>,
  timeoutMs: number,
  timeoutAnswer: APIGatewayProxyResult,
): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<APIGatewayProxyResult>((resolve) => {
    timer = setTimeout(() => resolve(timeoutAnswer), timeoutMs);
  });
  try {
    // The gateway's clock starts before the function's, so at the same limit the gateway's 504 comes first, as on AWS.
    return await Promise.race([invoke(), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
