import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { PayloadTooLargeError, RequestTimeoutError } from '../../functions/shared/errors.ts';
import { errorResponse } from '../../functions/shared/http-errors.ts';
import { MAX_REQUEST_BODY_BYTES } from '../../functions/shared/limits.ts';
import type { Route } from '../../functions/routes.ts';
import { localContext, toProxyEvent, type RequestTarget } from './api-gateway-event.ts';
import { isStreamingHandler, LocalResponseStream } from './lambda-streaming.ts';

export type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
type StreamingProxyHandler = (event: APIGatewayProxyEvent, stream: LocalResponseStream, context: Context) => Promise<void>;

export interface BoundRoute {
  route: Route;
  handler: ProxyHandler;
}

interface CompiledRoute extends BoundRoute {
  pattern: RegExp;
  parameterNames: string[];
}

/** What API Gateway answers for a path or method it has no resource for (our gateway response maps it to 404). */
const NOT_FOUND = { message: 'Not Found' };
const INTEGRATION_TIMEOUT_MS = 29_000;
/** A streaming integration holds the response up to 15 minutes (what the CDK API configures). */
const STREAMING_INTEGRATION_TIMEOUT_MS = 15 * 60_000;

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
  response.writeHead(result.statusCode, headers);
  response.end(body);
}

/**
 * Reads the body the way the webhook spec's limits require: at most 1 MiB (413 as soon as more arrives)
 * and within the transfer time (408). Answers undefined once it has already answered the request itself.
 */
function readBody(
  request: IncomingMessage,
  response: ServerResponse,
  route: Route,
  bodyTimeoutMs: number,
): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const refuse = (error: Error) => {
      send(response, errorResponse(error, route.errorShape), true);
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
  bodyTimeoutMs: number;
  /** The deployed stage (`prod`): `/<stage>/api/...` is the AWS-shaped URL; the unprefixed one keeps working locally. */
  stage: string;
  /** REST response streaming ends a response after this long without a byte (5 minutes on a REGIONAL endpoint). */
  streamIdleTimeoutMs: number;
}

/** What API Gateway answers when a non-streaming integration does not answer within 29 seconds. */
const INTEGRATION_TIMED_OUT = { message: 'Endpoint request timed out' };

function targetOf(pathname: string, stage: string): RequestTarget {
  const prefix = `/${stage}`;
  if (pathname.startsWith(`${prefix}/`)) return { stage, path: pathname.slice(prefix.length), requestPath: pathname };
  // Like a custom domain mapped without a base path: the path is the same in both places.
  return { stage, path: pathname, requestPath: pathname };
}

/** Serves the route table over HTTP, invoking each handler with the proxy event API Gateway would send. */
export function createApiServer(boundRoutes: BoundRoute[], options: ApiServerOptions): Server {
  const compiled = boundRoutes.map(compile);
  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const target = targetOf(url.pathname, options.stage);
    let match: { route: CompiledRoute; values: string[] } | undefined;
    for (const candidate of compiled) {
      const values = candidate.pattern.exec(target.path);
      if (values && candidate.route.method === request.method) match = { route: candidate, values: values.slice(1) };
    }
    if (!match) {
      request.resume();
      send(response, { statusCode: 404, headers: { 'content-type': 'application/json' }, body: JSON.stringify(NOT_FOUND) });
      return;
    }
    const { route: compiledRoute, values } = match;
    const body = await readBody(request, response, compiledRoute.route, options.bodyTimeoutMs);
    if (!body) return;
    const pathParameters = Object.fromEntries(
      compiledRoute.parameterNames.map((name, i) => [name, safeDecode(values[i] ?? '')]),
    );
    const event = toProxyEvent(request, url, target, compiledRoute.route.path, pathParameters, body);
    const { route, handler } = compiledRoute;
    try {
      if (isStreamingHandler(handler)) {
        const context = localContext(route.id, STREAMING_INTEGRATION_TIMEOUT_MS);
        const stream = new LocalResponseStream(response, { idleTimeoutMs: options.streamIdleTimeoutMs, totalTimeoutMs: STREAMING_INTEGRATION_TIMEOUT_MS });
        await (handler as unknown as StreamingProxyHandler)(event, stream, context);
      } else {
        const result = await withIntegrationTimeout(handler(event, localContext(route.id, INTEGRATION_TIMEOUT_MS)));
        send(response, result);
      }
    } catch (error) {
      // What API Gateway answers when the Lambda integration itself fails.
      console.error(`handler ${route.id} threw`, error);
      // A streaming handler may fail after its status went out: cut the response as Lambda would.
      if (response.headersSent) return void response.destroy();
      send(response, { statusCode: 502, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'Internal server error' }) });
    }
  });
  // The body deadline is ours (408 in the spec's shape); Node's own request timeout would answer first otherwise.
  server.requestTimeout = 0;
  return server;
}

/** API Gateway gives up on a non-streaming integration after 29 s and answers 504, whatever the function does next. */
async function withIntegrationTimeout(work: Promise<APIGatewayProxyResult>): Promise<APIGatewayProxyResult> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<APIGatewayProxyResult>((resolve) => {
    timer = setTimeout(
      () => resolve({ statusCode: 504, headers: { 'content-type': 'application/json' }, body: JSON.stringify(INTEGRATION_TIMED_OUT) }),
      INTEGRATION_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([work, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
