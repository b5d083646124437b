import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes, type Route } from '#functions/routes.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, publishFixtures } from '../support/published.ts';
import { http, type HttpResult } from '../support/http.ts';
import { openSse } from '../support/sse.ts';

/**
 * A page on another origin calling the Published Workflow API, as a browser would: a preflight, then the request
 * with `Origin`. The twin reads CORS_ALLOWED_ORIGINS as `npm start` does (set here before it starts; each test file runs in
 * a process of its own). Without a real browser on this machine, the test reads the headers a browser decides by.
 */
const DASHBOARD = 'https://dashboard.example';
const DEV_SERVER = 'http://localhost:5173';
const ELSEWHERE = 'https://elsewhere.example';
const EVIL = 'https://evil.example';
/** What a browser sends from a sandboxed frame, a `data:` or `file:` page: an origin no list may hold. */
const OPAQUE = 'null';
/** The CORS headers a browser decides by, and the Vary that would tell a cache there is one to decide. */
const CORS_HEADER_NAMES = [
  'access-control-allow-origin',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'vary',
];
const corsHeadersOf = (answer: HttpResult) =>
  Object.fromEntries(CORS_HEADER_NAMES.flatMap((name) => (answer.headers[name] === undefined ? [] : [[name, answer.headers[name]]])));

/** A function that answers `?malformed=1` with no proxy result, so that API Gateway answers 502 by itself. */
const failing: Route = {
  id: 'ProbeFailing',
  method: 'GET',
  path: '/api/v1/probe/failing',
  handler: '../test/fixtures/functions/environment-probe.ts',
  errorShape: 'published',
  tables: {},
};

let twin: TestTwin;
let key: string;

/** A twin started with `origins` as its CORS_ALLOWED_ORIGINS (none: unset), for the tests of one describe block. */
function twinWithOrigins(origins: string | undefined) {
  beforeAll(async () => {
    if (origins === undefined) delete process.env.CORS_ALLOWED_ORIGINS;
    else process.env.CORS_ALLOWED_ORIGINS = origins;
    twin = await startTestTwin({ routes: [...routes, failing] });
    await publishFixtures(twin);
    key = (await createKey(twin, 'full')).key;
  });
  afterAll(async () => {
    await twin?.close();
    delete process.env.CORS_ALLOWED_ORIGINS;
  });
}

const base = () => `${twin.url}/prod/api/v1/published`;

/** What a browser sends before a request with an Authorization header (a non-simple request). */
function preflight(url: string, origin: string, method: string, headers = 'authorization, content-type'): Promise<HttpResult> {
  return http(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });
}

/** The request itself, as fetch() on the page sends it. */
function crossOrigin(
  url: string,
  origin: string,
  options: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  return http(url, { ...options, headers: { origin, authorization: `Bearer ${key}`, ...options.headers } });
}

describe('with CORS_ALLOWED_ORIGINS', () => {
  twinWithOrigins(`${DASHBOARD}, ${DEV_SERVER}`);

  describe('preflights', () => {
    it('allows a listed origin: its methods, the key, the JSON body and the resume id, cached for two hours', async () => {
      const answer = await preflight(`${base()}/workflows`, DASHBOARD, 'GET', 'authorization, last-event-id');
      expect(answer.status).toBe(204);
      expect(answer.text).toBe('');
      expect(answer.headers).toMatchObject({
        'access-control-allow-origin': DASHBOARD,
        'access-control-allow-methods': 'GET, OPTIONS',
        'access-control-allow-headers': 'authorization, content-type, last-event-id, idempotency-key',
        'access-control-max-age': '7200',
        vary: 'Origin',
      });
      // Never with credentials: the key travels in Authorization, set by the page, not in a cookie.
      expect(answer.headers['access-control-allow-credentials']).toBeUndefined();
    });

    it('is answered by each resource with its own method, streaming routes included', async () => {
      const cases: [string, string][] = [
        ['/workflows/echo/execute', 'POST'],
        ['/workflows/echo/stream', 'POST'],
        ['/executions/any-id/stream', 'GET'],
        ['/executions/any-id/events', 'GET'],
        ['/executions/any-id/approve', 'POST'],
      ];
      for (const [path, method] of cases) {
        const answer = await preflight(`${base()}${path}`, DEV_SERVER, method);
        expect(answer.status, path).toBe(204);
        expect(answer.headers['access-control-allow-origin'], path).toBe(DEV_SERVER);
        expect(answer.headers['access-control-allow-methods'], path).toBe(`${method}, OPTIONS`);
      }
    });

    it('refuses an origin not on the list with 403 and no CORS header, so the browser never sends the request', async () => {
      const answer = await preflight(`${base()}/workflows/echo/execute`, ELSEWHERE, 'POST');
      expect(answer.status).toBe(403);
      expect(answer.headers['access-control-allow-origin']).toBeUndefined();
      expect(answer.headers['access-control-allow-methods']).toBeUndefined();
      expect(answer.body).toEqual({ detail: 'This origin may not call the API from a browser' });
    });

    it('gives the webhook API none: it is called by servers, never by pages', async () => {
      const { token } = await boundLink(twin, 'calls');
      const answer = await preflight(`${twin.webhookUrl}/api/v1/webhooks/${token}/events`, DASHBOARD, 'POST');
      expect(answer.status).toBe(404);
      expect(answer.headers['access-control-allow-methods']).toBeUndefined();
      const ping = await http(`${twin.webhookUrl}/api/v1/webhooks/${token}/ping`, { headers: { origin: DASHBOARD } });
      expect(ping.status).toBe(200);
      expect(ping.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('cross-origin requests', () => {
    it('lets a listed origin read the answer, and tells caches it varies by origin', async () => {
      const answer = await crossOrigin(`${base()}/workflows`, DASHBOARD);
      expect(answer.status).toBe(200);
      expect(answer.headers).toMatchObject({
        'access-control-allow-origin': DASHBOARD,
        'access-control-expose-headers': 'retry-after, x-execution-id, content-location',
        vary: 'Origin',
      });
      expect(answer.body.workflows.length).toBeGreaterThan(0);
    });

    it('names no origin for another page (its browser hides the answer), still varying by origin', async () => {
      const answer = await crossOrigin(`${base()}/workflows`, ELSEWHERE);
      expect(answer.headers['access-control-allow-origin']).toBeUndefined();
      expect(answer.headers.vary).toBe('Origin');
    });

    it('lets the page read refusals too: a 401 is a 401, not "Failed to fetch"', async () => {
      const answer = await http(`${base()}/workflows`, { headers: { origin: DASHBOARD, authorization: 'Bearer wrong' } });
      expect(answer.status).toBe(401);
      expect(answer.headers['access-control-allow-origin']).toBe(DASHBOARD);
      expect(answer.body).toHaveProperty('detail');
    });

    it('sends a stream with the CORS headers in its first bytes, and the 204 that ends a finished stream with them too', async () => {
      const stream = await openSse(`${base()}/workflows/echo/stream`, {
        method: 'POST',
        headers: { origin: DASHBOARD, authorization: `Bearer ${key}` },
        body: { user_id: 'u', input: { message: 'hi' } },
      });
      expect(stream.status).toBe(200);
      expect(stream.headers['content-type']).toBe('text/event-stream');
      expect(stream.headers['access-control-allow-origin']).toBe(DASHBOARD);
      await stream.ended;
      const last = stream.events.at(-1)!;
      const ended = await crossOrigin(`${base()}/executions/${last.data.execution_id}/stream`, DASHBOARD, {
        headers: { 'last-event-id': String(last.id) },
      });
      expect(ended.status).toBe(204);
      expect(ended.headers['access-control-allow-origin']).toBe(DASHBOARD);
    });

    it('lets the page read the blocking execute, whose status goes out before the execution ends', async () => {
      const answer = await crossOrigin(`${base()}/workflows/echo/execute`, DEV_SERVER, {
        method: 'POST',
        body: JSON.stringify({ user_id: 'u', input: { message: 'hi' } }),
      });
      expect(answer.status).toBe(200);
      expect(answer.headers['access-control-allow-origin']).toBe(DEV_SERVER);
      expect(answer.body).toMatchObject({ status: 'completed' });
    });
  });

  describe("the gateway's own answers (two origins: a gateway response cannot check the list)", () => {
    /** Answers of API Gateway itself, no function's: an unknown path, an unknown method on a known path, a failed integration. */
    const gatewayAnswers = (origin: string) => [
      http(`${base()}/no-such-thing`, { headers: { origin }, undocumented: 'a path the API does not have: the gateway answers' }),
      http(`${base()}/workflows`, {
        method: 'DELETE',
        headers: { origin, authorization: `Bearer ${key}` },
        undocumented: 'a method the resource does not have: the gateway answers',
      }),
      http(`${twin.url}/prod/api/v1/probe/failing?malformed=1`, { headers: { origin } }),
    ];

    it('name no origin to a page not on the list, nor to an opaque origin (null)', async () => {
      for (const origin of [EVIL, OPAQUE]) {
        const [unknown, unknownMethod, failed] = await Promise.all(gatewayAnswers(origin));
        expect(unknown!.status, origin).toBe(404);
        expect(unknownMethod!.status, origin).toBe(404);
        expect(failed!.status, origin).toBe(502);
        expect(failed!.body, origin).toEqual({ error: 'Internal server error', detail: 'Internal server error' });
        for (const answer of [unknown!, unknownMethod!, failed!]) expect(corsHeadersOf(answer), origin).toEqual({});
      }
      const unknownPreflight = await preflight(`${base()}/no-such-thing`, EVIL, 'GET');
      expect(unknownPreflight.status).toBe(404);
      expect(corsHeadersOf(unknownPreflight)).toEqual({});
    });

    it('name none to an allowed page either: the gateway cannot tell it from another (the page sees a network error)', async () => {
      for (const origin of [DASHBOARD, DEV_SERVER]) {
        const answers = await Promise.all(gatewayAnswers(origin));
        expect(
          answers.map((answer) => answer.status),
          origin,
        ).toEqual([404, 404, 502]);
        for (const answer of answers) expect(corsHeadersOf(answer), origin).toEqual({});
      }
    });

    it("while a function's answer names an allowed origin, and no other", async () => {
      const allowed = await crossOrigin(`${base()}/workflows`, DEV_SERVER);
      expect(allowed.status).toBe(200);
      expect(allowed.headers['access-control-allow-origin']).toBe(DEV_SERVER);
      for (const origin of [EVIL, OPAQUE]) {
        const refused = await crossOrigin(`${base()}/workflows`, origin);
        expect(refused.status, origin).toBe(200);
        expect(corsHeadersOf(refused), origin).toEqual({ vary: 'Origin' });
        const denied = await preflight(`${base()}/workflows`, origin, 'GET');
        expect(denied.status, origin).toBe(403);
        expect(denied.headers['access-control-allow-origin'], origin).toBeUndefined();
      }
    });
  });
});

describe('with one origin in CORS_ALLOWED_ORIGINS', () => {
  twinWithOrigins(DASHBOARD);

  it("names that origin on the gateway's own answers, whoever asks (a browser shows them to that page only)", async () => {
    for (const origin of [DASHBOARD, EVIL, OPAQUE]) {
      const unknown = await http(`${base()}/no-such-thing`, {
        headers: { origin },
        undocumented: 'a path the API does not have: the gateway answers',
      });
      expect(unknown.status, origin).toBe(404);
      expect(corsHeadersOf(unknown), origin).toEqual({
        'access-control-allow-origin': DASHBOARD,
        'access-control-expose-headers': 'retry-after, x-execution-id, content-location',
        vary: 'Origin',
      });
    }
    const failed = await http(`${twin.url}/prod/api/v1/probe/failing?malformed=1`, { headers: { origin: EVIL } });
    expect(failed.status).toBe(502);
    expect(failed.headers['access-control-allow-origin']).toBe(DASHBOARD);
  });
});

describe('without CORS_ALLOWED_ORIGINS (the default)', () => {
  twinWithOrigins(undefined);

  it('answers no preflight and names no origin: a page on another origin cannot read anything', async () => {
    const answer = await preflight(`${base()}/workflows`, DASHBOARD, 'GET');
    expect(answer.status).toBe(404);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    const read = await crossOrigin(`${base()}/workflows`, DASHBOARD);
    expect(read.status).toBe(200);
    expect(read.headers['access-control-allow-origin']).toBeUndefined();
    expect(read.headers.vary).toBeUndefined();
    const unknown = await http(`${base()}/no-such-thing`, {
      headers: { origin: DASHBOARD },
      undocumented: 'a path the API does not have: the gateway answers',
    });
    expect(unknown.headers['access-control-allow-origin']).toBeUndefined();
  });
});
