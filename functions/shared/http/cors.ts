import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { WEBHOOKS_PREFIX } from './route-groups.ts';

/*
 * Cross-origin requests from browsers (Fetch standard, CORS protocol). Off unless a deployment names the origins it
 * allows: API keys belong on servers (functions/published/README.md#the-contract-in-brief), so a browser page is an
 * exception a deployment opts into, for its own internal tools and dashboards. One setting feeds every place that answers: the CDK context
 * `corsAllowedOrigins` (lib/cdk/constructs/api.ts), the twin's `CORS_ALLOWED_ORIGINS` (lib/twin/http-server.ts), and the
 * functions' `CORS_ALLOWED_ORIGINS`, which both of those set.
 */

/** The functions' variable (and the twin's): the allowed origins, comma-separated; unset or empty is off. */
export const CORS_ALLOWED_ORIGINS_ENV = 'CORS_ALLOWED_ORIGINS';

/**
 * Request headers a page may send: the key, the JSON body's type, the resume id of a stream, and the
 * `Idempotency-Key` that makes a repeated execute or stream the same execution (other routes ignore it; some HTTP clients
 * add it to every POST on their own, and refusing it would fail the preflight of such a client).
 */
const CORS_ALLOW_HEADERS = ['authorization', 'content-type', 'last-event-id', 'idempotency-key'] as const;

/**
 * Response headers a page may read beyond the CORS-safelisted ones (content-type, cache-control, ...): a 429's
 * `Retry-After`, and the headers execute and stream name their run with (`X-Execution-Id`, `Content-Location`). The
 * streams' event ids travel in the body (`id:` lines), not in a header.
 */
export const CORS_EXPOSE_HEADERS = ['retry-after', 'x-execution-id', 'content-location'] as const;

/**
 * How long a browser may reuse a preflight answer. Each preflight is a function invocation; Chromium caps the
 * value at 2 hours (Firefox at 24), and an origin taken off the list loses access at once anyway, since every
 * actual response is checked again.
 */
const CORS_MAX_AGE_SECONDS = 7200;

/**
 * The allowed origins from the setting `name`: `https://a.example,https://b.example` (context or variable), or an
 * array (cdk.json). Each must be an origin exactly as a browser sends it in `Origin`: scheme, host, port only when not the
 * default, lower case, no path or trailing slash; anything else would never match and fails the deployment or start.
 * `*` is refused: any page on the web would be invited to hold a key.
 */
export function parseCorsOrigins(setting: unknown, name: string): readonly string[] {
  if (setting === undefined || setting === null) return [];
  const entries = typeof setting === 'string' ? setting.split(',') : Array.isArray(setting) ? setting : undefined;
  if (!entries || entries.some((entry) => typeof entry !== 'string')) {
    throw new Error(`${name} must be a comma-separated list of origins, got ${JSON.stringify(setting)}`);
  }
  const origins = (entries as string[]).map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const origin of origins) {
    if (origin === '*') throw new Error(`${name}: * is not allowed; API keys belong on servers, so name each origin that may call the API`);
    const canonical = originOf(origin);
    if (canonical !== origin) {
      const hint = canonical ? ` (write ${canonical})` : '';
      throw new Error(`${name}: ${origin} is not an origin as a browser sends it: http(s)://host[:port]${hint}`);
    }
  }
  return [...new Set(origins)];
}

function originOf(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Routes a browser may call when origins are configured: the Published Workflow API. The webhook API is called by
 * other servers (telephony and chat platforms), never by a page, so it gets neither preflights nor CORS headers.
 */
export function servesBrowsers(route: { readonly path: string }): boolean {
  return !route.path.startsWith(`${WEBHOOKS_PREFIX}/`);
}

/** What a function needs to answer browsers: the allowed origins and the methods of its resource. */
export interface CorsPolicy {
  readonly origins: readonly string[];
  /** The methods the resource has (OPTIONS aside), for the preflight's `Access-Control-Allow-Methods`. */
  readonly methods: readonly string[];
}

/** The policy from the function's environment, read once at cold start; none when no origin is configured. */
export function corsPolicyFromEnv(methods: readonly string[]): CorsPolicy | undefined {
  const origins = parseCorsOrigins(process.env[CORS_ALLOWED_ORIGINS_ENV], CORS_ALLOWED_ORIGINS_ENV);
  return origins.length > 0 ? { origins, methods } : undefined;
}

function requestOrigin(request: Pick<APIGatewayProxyEvent, 'headers'>): string | undefined {
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    if (name.toLowerCase() === 'origin' && value !== undefined) return value;
  }
  return undefined;
}

/**
 * The CORS headers of every answer of a browser-serving route (success, refusal, stream): the caller's origin
 * echoed only when it is on the list. Every answer varies by `Origin`, so caches keep one copy per origin.
 */
export function corsResponseHeaders(origins: readonly string[], request: Pick<APIGatewayProxyEvent, 'headers'>): Record<string, string> {
  const origin = requestOrigin(request);
  if (origin === undefined || !origins.includes(origin)) return { vary: 'Origin' };
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': CORS_EXPOSE_HEADERS.join(', '),
    vary: 'Origin',
  };
}

/**
 * The answer to `OPTIONS`: for an allowed origin, 204 with what it may send; for another origin 403 without any
 * CORS header (the browser then refuses the request it was about to send, and devtools show why); without an
 * `Origin` (not a browser), 204 with `Allow`. Answered before the key is checked: a preflight never carries one.
 */
export function preflightResponse(policy: CorsPolicy, request: Pick<APIGatewayProxyEvent, 'headers'>): APIGatewayProxyResult {
  const allow = [...policy.methods, 'OPTIONS'].join(', ');
  const origin = requestOrigin(request);
  if (origin === undefined) return { statusCode: 204, headers: { allow, vary: 'Origin' }, body: '' };
  if (!policy.origins.includes(origin)) {
    return {
      statusCode: 403,
      headers: { 'content-type': 'application/json', vary: 'Origin' },
      body: JSON.stringify({ detail: 'This origin may not call the API from a browser' }),
    };
  }
  return {
    statusCode: 204,
    headers: {
      'access-control-allow-origin': origin,
      'access-control-allow-methods': allow,
      'access-control-allow-headers': CORS_ALLOW_HEADERS.join(', '),
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
      allow,
      vary: 'Origin',
    },
    body: '',
  };
}
