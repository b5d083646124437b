import type { ErrorBodyShape } from './shared/http/http-errors.ts';
import { METERED, type ResourceGrants } from './shared/resources.ts';
import type { Scope } from './shared/access.ts';
import { WEBHOOKS_PREFIX } from './shared/http/route-groups.ts';
import { STREAM_PROBE_TIMEOUT_SECONDS } from './shared/limits.ts';

export { gatewayOf, ROUTE_GROUPS, type GatewayKind } from './shared/http/route-groups.ts';

/**
 * The route table: the one list of HTTP routes. `lib/cdk/constructs/api.ts` builds API Gateway resources
 * and Lambda functions from it; `lib/twin` serves the same handlers from it on localhost.
 */
export interface Route extends ResourceGrants {
  /** Stable name: the Lambda function's construct id. */
  readonly id: string;
  readonly method: 'GET' | 'POST';
  /** API Gateway resource path, with `{param}` placeholders. */
  readonly path: string;
  /** Module under `functions/` exporting `handler`. */
  readonly handler: string;
  /**
   * The Lambda function serving it, where several routes share one (each API's documentation); its construct id.
   * Routes that share a function share its handler and grants.
   * @default the route's id
   */
  readonly functionId?: string;
  readonly errorShape: ErrorBodyShape;
  /** Published Workflow API: the scope the caller's key needs (the OpenAPI document's `x-scope`). */
  readonly scope?: Scope;
  /**
   * Response streaming: on AWS the integration holds the response up to 15 minutes instead of 29 seconds
   * (blocking execute, and server-sent events later).
   */
  readonly streaming?: boolean;
  /**
   * A streaming route whose work has a bound of its own: its time limit in seconds, derived from that bound.
   * @default 15 minutes where the route streams, else 29 seconds
   */
  readonly timeoutSeconds?: number;
  /**
   * A stream a caller holds open (server-sent events): its invocation holds a slot of its key's open streams and one of
   * the deployment's (MAX_OPEN_STREAMS) in the stream events table, so it needs `streamEvents: 'readWrite'`. `window`:
   * it ends after the deployment's stream window (STREAM_WINDOW_SECONDS); `bounded`: its own time limit bounds it.
   */
  readonly openStream?: 'window' | 'bounded';
}

/**
 * The function's timeout, and API Gateway's integration timeout: the route's own, else 29 seconds, or 15 minutes where
 * the route streams. CDK configures both from it; the local twin enforces both.
 */
export function routeTimeoutSeconds(route: Pick<Route, 'streaming' | 'timeoutSeconds'>): number {
  return route.timeoutSeconds ?? (route.streaming ? 15 * 60 : 29);
}

/** A Lambda function behind the APIs, and the routes it serves. */
export interface RouteFunction extends ResourceGrants, Pick<Route, 'handler' | 'streaming' | 'timeoutSeconds' | 'openStream'> {
  readonly id: string;
  readonly routes: readonly Route[];
}

/** One entry per function: routes that share one (`functionId`) must agree on all but their path and method. */
export function routeFunctions(table: readonly Route[] = routes): RouteFunction[] {
  const byId = new Map<string, RouteFunction>();
  for (const route of table) {
    const id = route.functionId ?? route.id;
    const { handler, streaming, timeoutSeconds, openStream, tables, buckets, stateMachines } = route;
    const own = { id, handler, streaming, timeoutSeconds, openStream, tables, buckets, stateMachines };
    const known = byId.get(id);
    if (!known) {
      byId.set(id, { ...own, routes: [route] });
      continue;
    }
    const { routes: _, ...first } = known;
    if (JSON.stringify(first) !== JSON.stringify(own)) throw new Error(`Routes of function ${id} differ in handler or grants`);
    byId.set(id, { ...known, routes: [...known.routes, route] });
  }
  return [...byId.values()];
}

/** The webhook API's `$default` route goes to this route's function: its documentation function, which answers 404. */
export const WEBHOOK_DEFAULT_ROUTE = 'WebhookDocs';

/** The function serving a route: its own id, or the one it shares. */
export function functionIdOf(route: Pick<Route, 'id' | 'functionId'>): string {
  return route.functionId ?? route.id;
}

/**
 * An HTTP API's integration timeout, at most 30 s (docs.aws.amazon.com/apigateway/latest/developerguide/
 * http-api-quotas.html); its functions' own (routeTimeoutSeconds) end a second before.
 */
export const HTTP_API_TIMEOUT_SECONDS = 30;

/** The API Gateway stage the CDK API deploys and the local twin serves (`<ApiUrl>` ends in `/prod/`). */
export const API_STAGE = 'prod';

/**
 * Request bodies of every content type reach the functions as base64 (`isBase64Encoded`): the bytes exactly as sent.
 * As text, API Gateway would hand over invalid UTF-8 already altered, so a handler could neither refuse it (400) nor
 * store a body as received; and each control byte escaped into the event's JSON takes 6 bytes, which can carry a
 * 1 MiB body past Lambda's 6 MB invocation payload (a 502). As base64 a 1 MiB body is 1.4 MB. Responses are
 * unaffected: a Lambda proxy response that is not marked base64 passes through as text. Every route must stay a
 * Lambda proxy: API Gateway is reported to answer MOCK integrations (CORS preflights, say) with 500 under this setting.
 */
export const BINARY_MEDIA_TYPES: readonly string[] = ['*/*'];

const WEBHOOKS = `${WEBHOOKS_PREFIX}/{token}`;
const PUBLISHED = '/api/v1/published';

/** Each API's documentation routes share one function (functions/shared/http/api-reference/documentation.ts). */
const WEBHOOK_DOCUMENTATION = {
  functionId: 'WebhookDocs',
  handler: 'inbound/handlers/documentation.ts',
  errorShape: 'webhook',
  tables: { ...METERED },
} as const;
const PUBLISHED_DOCUMENTATION = {
  functionId: 'PublishedDocs',
  handler: 'published/handlers/documentation.ts',
  errorShape: 'published',
  tables: { ...METERED },
} as const;

/** Every published route authenticates (apiKeys) and counts its key's requests (counters). */
const AUTHENTICATED = { apiKeys: 'read', counters: 'readWrite' } as const;

export const routes: readonly Route[] = [
  {
    id: 'WebhookPing',
    method: 'GET',
    path: `${WEBHOOKS}/ping`,
    handler: 'inbound/handlers/ping.ts',
    errorShape: 'webhook',
    tables: { ...METERED, links: 'read', counters: 'readWrite' },
  },
  {
    id: 'WebhookPostEvent',
    method: 'POST',
    path: `${WEBHOOKS}/events`,
    handler: 'inbound/handlers/post-event.ts',
    errorShape: 'webhook',
    tables: { ...METERED, links: 'readWrite', counters: 'readWrite', inboundEvents: 'readWrite' },
    // Deletes the body it stored when the event turns out to be a duplicate.
    buckets: { bodies: { 'inbound/': 'writeDelete' } },
  },

  {
    // Literal beside `{token}`: API Gateway matches a literal segment before a parameter, and every token route
    // has a segment after the token, so neither can take the other's requests.
    id: 'WebhookOpenApi',
    method: 'GET',
    path: `${WEBHOOKS_PREFIX}/openapi.json`,
    ...WEBHOOK_DOCUMENTATION,
  },
  // The same description as OpenAPI 3.1, for tools that do not read 3.2 (each stream's events as its schema).
  { id: 'WebhookOpenApi31', method: 'GET', path: `${WEBHOOKS_PREFIX}/openapi-3.1.json`, ...WEBHOOK_DOCUMENTATION },
  // The document rendered for people (Redoc), and the script it loads: served by the API, no token, no other host.
  { id: 'WebhookDocs', method: 'GET', path: `${WEBHOOKS_PREFIX}/docs`, ...WEBHOOK_DOCUMENTATION },
  { id: 'WebhookDocsScript', method: 'GET', path: `${WEBHOOKS_PREFIX}/docs/redoc.standalone.js`, ...WEBHOOK_DOCUMENTATION },

  // The API's description: public, as what it restates is told to every caller, so it has no scope and asks for no key.
  { id: 'PublishedOpenApi', method: 'GET', path: `${PUBLISHED}/openapi.json`, ...PUBLISHED_DOCUMENTATION },
  { id: 'PublishedOpenApi31', method: 'GET', path: `${PUBLISHED}/openapi-3.1.json`, ...PUBLISHED_DOCUMENTATION },
  { id: 'PublishedDocs', method: 'GET', path: `${PUBLISHED}/docs`, ...PUBLISHED_DOCUMENTATION },
  { id: 'PublishedDocsScript', method: 'GET', path: `${PUBLISHED}/docs/redoc.standalone.js`, ...PUBLISHED_DOCUMENTATION },
  {
    id: 'PublishedListWorkflows',
    method: 'GET',
    path: `${PUBLISHED}/workflows`,
    handler: 'published/handlers/list-workflows.ts',
    errorShape: 'published',
    scope: 'workflows.read',
    tables: { ...AUTHENTICATED, ...METERED, publications: 'read' },
  },
  {
    id: 'PublishedGetWorkflow',
    method: 'GET',
    path: `${PUBLISHED}/workflows/{workflow_id}`,
    handler: 'published/handlers/get-workflow.ts',
    errorShape: 'published',
    scope: 'workflows.read',
    tables: { ...AUTHENTICATED, ...METERED, publications: 'read' },
  },
  {
    id: 'PublishedExecute',
    method: 'POST',
    path: `${PUBLISHED}/workflows/{workflow_id}/execute`,
    handler: 'published/handlers/execute.ts',
    errorShape: 'published',
    scope: 'workflows.execute',
    streaming: true,
    // streamEvents: writes the execution log's first event (start), at id 1, without reading the log.
    // executions: the execution's items, and its Idempotency-Key's reservation (`idempotency#<project>#<key>`).
    tables: { ...AUTHENTICATED, ...METERED, publications: 'read', executions: 'readWrite', userState: 'write', streamEvents: 'write' },
    // Writes a large execution context; reads a large output or approval message back for the answer.
    buckets: { bodies: { 'executions/': 'readWrite' } },
    stateMachines: { workflow: ['start'] },
  },
  {
    id: 'PublishedStreamWorkflow',
    method: 'POST',
    path: `${PUBLISHED}/workflows/{workflow_id}/stream`,
    handler: 'published/handlers/stream-workflow.ts',
    errorShape: 'published',
    scope: 'workflows.stream',
    streaming: true,
    openStream: 'window',
    // Starts the execution as execute does (its Idempotency-Key too), then tails its log; holds an open stream's slots there.
    tables: { ...AUTHENTICATED, ...METERED, publications: 'read', executions: 'readWrite', userState: 'write', streamEvents: 'readWrite' },
    buckets: { bodies: { 'executions/': 'readWrite' } },
    stateMachines: { workflow: ['start'] },
  },
  {
    id: 'PublishedGetExecution',
    method: 'GET',
    path: `${PUBLISHED}/executions/{execution_id}`,
    handler: 'published/handlers/get-execution.ts',
    errorShape: 'published',
    scope: 'executions.read',
    tables: { ...AUTHENTICATED, ...METERED, executions: 'read' },
    buckets: { bodies: { 'executions/': 'read' } },
  },
  {
    id: 'PublishedStreamExecution',
    method: 'GET',
    path: `${PUBLISHED}/executions/{execution_id}/stream`,
    handler: 'published/handlers/stream-execution.ts',
    errorShape: 'published',
    scope: 'workflows.stream',
    streaming: true,
    openStream: 'window',
    // The log says everything the stream shows, whose execution it is included: nothing else is read. It writes only
    // its open stream's slots (beside the logs).
    tables: { ...AUTHENTICATED, ...METERED, streamEvents: 'readWrite' },
  },
  {
    id: 'PublishedExecutionEvents',
    method: 'GET',
    path: `${PUBLISHED}/executions/{execution_id}/events`,
    handler: 'published/handlers/execution-events.ts',
    errorShape: 'published',
    scope: 'events.subscribe',
    streaming: true,
    openStream: 'window',
    // Reads the log; writes only its open stream's slots.
    tables: { ...AUTHENTICATED, ...METERED, streamEvents: 'readWrite' },
  },
  {
    id: 'PublishedStopExecution',
    method: 'POST',
    path: `${PUBLISHED}/executions/{execution_id}/stop`,
    handler: 'published/handlers/stop-execution.ts',
    errorShape: 'published',
    scope: 'executions.stop',
    // streamEvents: ends the execution's log with its `complete` (cancelled).
    tables: { ...AUTHENTICATED, ...METERED, executions: 'readWrite', streamEvents: 'readWrite' },
    // Reads the execution whole (a finished one's large output too) before answering 409.
    buckets: { bodies: { 'executions/': 'read' } },
    stateMachines: { workflow: ['stop', 'start'] },
  },
  {
    id: 'PublishedApprove',
    method: 'POST',
    path: `${PUBLISHED}/executions/{execution_id}/approve`,
    handler: 'published/handlers/approve.ts',
    errorShape: 'published',
    scope: 'executions.approve',
    // streamEvents: an approval that can no longer be answered fails the execution and ends its log.
    tables: { ...AUTHENTICATED, ...METERED, executions: 'readWrite', streamEvents: 'readWrite' },
    // Reads a large approval message; a decision never writes one (its claim leaves the approval as it is).
    buckets: { bodies: { 'executions/': 'read' } },
    // start: an approval whose task token is gone fails the execution and starts its callback execution.
    stateMachines: { workflow: ['taskResponse', 'start'] },
  },
  {
    id: 'PublishedReject',
    method: 'POST',
    path: `${PUBLISHED}/executions/{execution_id}/reject`,
    handler: 'published/handlers/reject.ts',
    errorShape: 'published',
    scope: 'executions.reject',
    // streamEvents: an approval that can no longer be answered fails the execution and ends its log.
    tables: { ...AUTHENTICATED, ...METERED, executions: 'readWrite', streamEvents: 'readWrite' },
    // Reads a large approval message; a decision never writes one (its claim leaves the approval as it is).
    buckets: { bodies: { 'executions/': 'read' } },
    // start: an approval whose task token is gone fails the execution and starts its callback execution.
    stateMachines: { workflow: ['taskResponse', 'start'] },
  },
  {
    // Diagnostics: writes exactly what it is asked, unpadded, through the streaming path the SSE routes take, so an
    // operator can measure whether small writes reach the client at once (functions/published/README.md).
    id: 'PublishedStreamProbe',
    method: 'GET',
    path: `${PUBLISHED}/diagnostics/stream-probe`,
    handler: 'published/handlers/stream-probe.ts',
    errorShape: 'published',
    // The scope every preset holds (read, execute, full): any ordinary key may measure.
    scope: 'workflows.read',
    streaming: true,
    // Holds at most STREAM_PROBE_MAX_HOLD_MS: its time limit follows from that, not from the streams' 15 minutes.
    timeoutSeconds: STREAM_PROBE_TIMEOUT_SECONDS,
    openStream: 'bounded',
    // Its open stream's slots, in the stream events table.
    tables: { ...AUTHENTICATED, ...METERED, streamEvents: 'readWrite' },
  },
];

/** A route's path with its `{param}` placeholders filled (each value percent-encoded as one path segment). */
export function routePath(id: string, parameters: Readonly<Record<string, string>>): string {
  return routeById(id).path.replace(/\{(\w+)\}/g, (_placeholder, name: string) => {
    const value = parameters[name];
    if (value === undefined) throw new Error(`Route ${id} needs the path parameter ${name}`);
    return encodeURIComponent(value);
  });
}

export function routeById(id: string): Route {
  const route = routes.find((candidate) => candidate.id === id);
  if (!route) throw new Error(`No route ${id} in the route table`);
  return route;
}
