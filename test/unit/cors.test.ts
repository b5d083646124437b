import { describe, expect, it } from 'vitest';
import { corsResponseHeaders, parseCorsOrigins, preflightResponse, servesBrowsers } from '#shared/http/cors.ts';
import { gatewayCorsHeaders } from '#lib/cdk/gateway-responses.ts';
import { routes } from '#functions/routes.ts';

const request = (origin?: string) => ({ headers: origin === undefined ? {} : { Origin: origin } });
const policy = { origins: ['https://a.example', 'http://localhost:5173'], methods: ['POST'] };

describe('the corsAllowedOrigins setting (CDK context, CORS_ALLOWED_ORIGINS)', () => {
  it('is off when unset or empty', () => {
    expect(parseCorsOrigins(undefined, 'corsAllowedOrigins')).toEqual([]);
    expect(parseCorsOrigins('', 'corsAllowedOrigins')).toEqual([]);
    expect(parseCorsOrigins(' , ', 'corsAllowedOrigins')).toEqual([]);
  });

  it('reads a comma-separated list or an array, trimmed and without repeats', () => {
    expect(parseCorsOrigins(' https://a.example, http://localhost:5173 ,https://a.example', 'corsAllowedOrigins')).toEqual([
      'https://a.example',
      'http://localhost:5173',
    ]);
    expect(parseCorsOrigins(['https://a.example:8443'], 'corsAllowedOrigins')).toEqual(['https://a.example:8443']);
  });

  it('refuses what a browser never sends as Origin, saying what to write', () => {
    expect(() => parseCorsOrigins('https://a.example/', 'corsAllowedOrigins')).toThrow(
      'corsAllowedOrigins: https://a.example/ is not an origin as a browser sends it: http(s)://host[:port] (write https://a.example)',
    );
    expect(() => parseCorsOrigins('https://A.example', 'corsAllowedOrigins')).toThrow('(write https://a.example)');
    expect(() => parseCorsOrigins('https://a.example:443', 'corsAllowedOrigins')).toThrow('(write https://a.example)');
    expect(() => parseCorsOrigins('https://a.example/app', 'corsAllowedOrigins')).toThrow('is not an origin');
    expect(() => parseCorsOrigins('a.example', 'corsAllowedOrigins')).toThrow('is not an origin');
    expect(() => parseCorsOrigins('ftp://a.example', 'corsAllowedOrigins')).toThrow('is not an origin');
    expect(() => parseCorsOrigins({ origin: 'https://a.example' }, 'corsAllowedOrigins')).toThrow('must be a comma-separated list');
  });

  it("refuses *: keys belong on servers, so each page's origin is named", () => {
    expect(() => parseCorsOrigins('https://a.example,*', 'corsAllowedOrigins')).toThrow('* is not allowed');
  });
});

describe('which routes answer browsers', () => {
  it('is every Published Workflow API route and no webhook route', () => {
    const browserRoutes = routes.filter(servesBrowsers).map((route) => route.id);
    expect(browserRoutes).toEqual(routes.filter((route) => route.path.startsWith('/api/v1/published/')).map((route) => route.id));
    expect(browserRoutes).not.toContain('WebhookPostEvent');
    expect(browserRoutes).not.toContain('WebhookPing');
  });
});

describe("a function's answers", () => {
  it("answers a listed origin's preflight with what it may send", () => {
    expect(preflightResponse(policy, request('http://localhost:5173'))).toEqual({
      statusCode: 204,
      headers: {
        'access-control-allow-origin': 'http://localhost:5173',
        'access-control-allow-methods': 'POST, OPTIONS',
        'access-control-allow-headers': 'authorization, content-type, last-event-id, idempotency-key',
        'access-control-max-age': '7200',
        allow: 'POST, OPTIONS',
        vary: 'Origin',
      },
      body: '',
    });
  });

  it("refuses another origin's preflight with 403 and no CORS header; answers a plain OPTIONS with Allow", () => {
    const refused = preflightResponse(policy, request('https://a.example.evil'));
    expect(refused.statusCode).toBe(403);
    expect(Object.keys(refused.headers!).filter((name) => name.startsWith('access-control-'))).toEqual([]);
    expect(preflightResponse(policy, request())).toMatchObject({ statusCode: 204, headers: { allow: 'POST, OPTIONS' } });
  });

  it('echoes a listed origin on every answer, and only a listed one, always varying by origin', () => {
    expect(corsResponseHeaders(policy.origins, request('https://a.example'))).toEqual({
      'access-control-allow-origin': 'https://a.example',
      'access-control-expose-headers': 'retry-after, x-execution-id, content-location',
      vary: 'Origin',
    });
    expect(corsResponseHeaders(policy.origins, request('https://a.example:444'))).toEqual({ vary: 'Origin' });
    expect(corsResponseHeaders(policy.origins, request())).toEqual({ vary: 'Origin' });
  });
});

describe("the gateway responses' headers", () => {
  it('are none without origins', () => {
    expect(gatewayCorsHeaders([])).toEqual({});
  });

  it('name the one allowed origin, which no other page can then use', () => {
    expect(gatewayCorsHeaders(['https://a.example'])).toEqual({
      'Access-Control-Allow-Origin': 'https://a.example',
      'Access-Control-Expose-Headers': 'retry-after, x-execution-id, content-location',
      Vary: 'Origin',
    });
  });

  it('are none when there are several: a gateway response cannot check a list, so it allows no origin at all', () => {
    expect(policy.origins.length).toBeGreaterThan(1);
    expect(gatewayCorsHeaders(policy.origins)).toEqual({});
  });
});
