import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { externalPrefix, externalUrl } from '#shared/http/external-url.ts';

const RESOURCE = '/api/v1/published/workflows/{workflow_id}/execute';

/** The fields API Gateway sets that the helper reads: `path` without the stage, `requestContext.path` with it. */
function event(requestPath: string, headers: Record<string, string> = {}, workflowId = 'support-bot'): APIGatewayProxyEvent {
  return {
    resource: RESOURCE,
    path: `/api/v1/published/workflows/${workflowId}/execute`,
    pathParameters: { workflow_id: workflowId },
    headers,
    requestContext: { path: requestPath, domainName: 'abc123.execute-api.eu-west-1.amazonaws.com' },
  } as unknown as APIGatewayProxyEvent;
}

const POLL = '/api/v1/published/executions/e-1';

describe('URLs the API hands back', () => {
  it('keep the stage of the deployed API, on the host the caller used, over https', () => {
    const request = event('/prod/api/v1/published/workflows/support-bot/execute', { Host: 'abc123.execute-api.eu-west-1.amazonaws.com' });
    expect(externalUrl(request, POLL)).toBe(`https://abc123.execute-api.eu-west-1.amazonaws.com/prod${POLL}`);
  });

  it('keep a custom domain’s base path, and no prefix at all when the domain maps the API at its root', () => {
    expect(externalUrl(event('/workflows-api/api/v1/published/workflows/support-bot/execute', { host: 'api.example.com' }), POLL)).toBe(
      `https://api.example.com/workflows-api${POLL}`,
    );
    expect(externalUrl(event('/api/v1/published/workflows/support-bot/execute', { host: 'api.example.com' }), POLL)).toBe(
      `https://api.example.com${POLL}`,
    );
  });

  it('follow X-Forwarded-Proto when it says http (the local twin), and ignore anything else it says', () => {
    const local = event('/prod/api/v1/published/workflows/support-bot/execute', { Host: '127.0.0.1:3000', 'X-Forwarded-Proto': 'http' });
    expect(externalUrl(local, POLL)).toBe(`http://127.0.0.1:3000/prod${POLL}`);
    const odd = event('/prod/api/v1/published/workflows/support-bot/execute', { Host: 'api.example.com', 'X-Forwarded-Proto': 'gopher' });
    expect(externalUrl(odd, POLL)).toBe(`https://api.example.com/prod${POLL}`);
  });

  it('match path parameters as whole segments, whatever their encoding', () => {
    const encoded = event('/prod/api/v1/published/workflows/a%20b/execute', { Host: 'api.example.com' }, 'a b');
    expect(externalPrefix(encoded)).toBe('/prod');
  });

  it('claim no prefix when requestContext.path does not end with the route, and fall back from a malformed Host', () => {
    expect(externalPrefix(event('/prod/something/else'))).toBe('');
    const badHost = event('/prod/api/v1/published/workflows/support-bot/execute', { Host: 'evil.com/@x' });
    expect(externalUrl(badHost, POLL)).toBe(`https://abc123.execute-api.eu-west-1.amazonaws.com/prod${POLL}`);
    const nothing = {
      ...event('/prod/api/v1/published/workflows/support-bot/execute'),
      requestContext: { path: '/prod/api/v1/published/workflows/support-bot/execute' },
    };
    expect(externalUrl(nothing as unknown as APIGatewayProxyEvent, POLL)).toBe(`/prod${POLL}`);
  });

  it("take a Host only within the bounds of DNS and of a port, else the deployment's own domain name", () => {
    const at = (host: string) => externalUrl(event('/prod/api/v1/published/workflows/support-bot/execute', { Host: host }), POLL);
    const own = `https://abc123.execute-api.eu-west-1.amazonaws.com/prod${POLL}`;
    const label = 'a'.repeat(63);
    const longest = [label, label, label, 'b'.repeat(61)].join('.');

    expect(longest).toHaveLength(253);
    for (const bounded of [longest, `${label}.example.com:65535`, 'api.example.com:1', '192.0.2.1:8443', '[2001:db8::1]:443']) {
      expect(at(bounded), bounded).toBe(`https://${bounded}/prod${POLL}`);
    }
    const unbounded = [
      `${'a'.repeat(5997)}.io`,
      `${longest}c`,
      `${'a'.repeat(64)}.example.com`,
      'api.example.com:99999',
      'api.example.com:0',
      'api.example.com:',
      '-api.example.com',
      'api..example.com',
      '[2001:db8::1',
      '[not:an:address]',
    ];
    for (const host of unbounded) expect(at(host), host.slice(0, 40)).toBe(own);
  });
});
