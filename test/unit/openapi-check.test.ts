import { describe, expect, it } from 'vitest';
import { documentedAnswer, expectDocumented, parseEventStream, type Answer } from '../support/openapi.ts';

/**
 * The check every e2e answer goes through (test/support/openapi.ts, called by http.ts, sse.ts, fetch.ts): it must
 * pass what the OpenAPI documents describe and fail what they do not, or the e2e tests prove nothing.
 */

const JSON_TYPE = { 'content-type': 'application/json' };
const answer = (status: number, body: unknown, headers: Record<string, string> = JSON_TYPE): Answer => ({
  status,
  headers,
  text: typeof body === 'string' ? body : JSON.stringify(body),
});
const call = (method: string, path: string) => ({ method, url: `http://127.0.0.1:3000${path}` });
const STREAM_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
const stream = (events: string) => answer(200, events, STREAM_HEADERS);
const START = 'id: 1\nevent: start\ndata: {"execution_id":"e","thread_id":"t","workflow_id":"w"}\n\n';
const STATUS = {
  execution_id: 'e',
  thread_id: 't',
  workflow_id: 'w',
  status: 'completed',
  output: 'hi',
  error: null,
  elapsed_time: 0.1,
  total_steps: 2,
  created_at: '2026-05-01T09:30:00.000Z',
  finished_at: '2026-05-01T09:30:00.100Z',
  pending_approval: null,
  usage: { model_calls: 1, input_tokens: 1, output_tokens: 1, tool_calls: 0, images: 0 },
};

describe('the OpenAPI check of an answer', () => {
  it('passes answers the documents describe, at the AWS-shaped URL too', () => {
    expect(() =>
      expectDocumented(call('GET', '/prod/api/v1/published/executions/abc'), answer(404, { detail: 'Execution not found' })),
    ).not.toThrow();
    expect(() => expectDocumented(call('GET', '/api/v1/published/executions/abc'), answer(200, STATUS))).not.toThrow();
    expect(() =>
      expectDocumented(call('POST', '/api/v1/webhooks/whk_x/events'), answer(200, { status: 'duplicate', external_id: 'e', event_id: 3 })),
    ).not.toThrow();
    expect(() =>
      expectDocumented(
        call('GET', '/api/v1/webhooks/whk_x/ping'),
        answer(429, { error: 'Rate limit' }, { ...JSON_TYPE, 'retry-after': '3' }),
      ),
    ).not.toThrow();
    expect(() => expectDocumented(call('GET', '/api/v1/published/executions/e/stream'), answer(204, '', {}))).not.toThrow();
  });

  it('fails a status the operation does not list', () => {
    expect(() => expectDocumented(call('GET', '/api/v1/published/workflows'), answer(418, { detail: 'teapot' }))).toThrow(
      /does not list status 418/,
    );
    expect(() => expectDocumented(call('POST', '/api/v1/published/executions/e/stop'), answer(204, '', {}))).toThrow(
      /does not list status 204/,
    );
    // Already at the head: a stream's status is checked before its first byte.
    expect(() => documentedAnswer(call('POST', '/api/v1/published/workflows/w/stream'), { status: 202, headers: STREAM_HEADERS })).toThrow(
      /does not list status 202/,
    );
  });

  it("fails a body that breaks the schema: a required field missing, a field too many, a wrong type, an error in the other API's shape", () => {
    expect(() => expectDocumented(call('GET', '/api/v1/published/workflows'), answer(200, { workflows: [], project_id: 'p' }))).toThrow(
      /publication_id/,
    );
    expect(() =>
      expectDocumented(
        call('POST', '/api/v1/webhooks/whk_x/events'),
        answer(201, { status: 'accepted', external_id: 'e', event_id: 3, messages: 0, extra: 1 }),
      ),
    ).toThrow(/additional/);
    expect(() => expectDocumented(call('GET', '/api/v1/published/executions/abc'), answer(200, { ...STATUS, total_steps: '2' }))).toThrow(
      /total_steps/,
    );
    expect(() => expectDocumented(call('GET', '/api/v1/published/executions/abc'), answer(404, { error: 'Execution not found' }))).toThrow(
      /detail/,
    );
    expect(() => expectDocumented(call('GET', '/api/v1/published/executions/abc'), answer(404, 'Not Found'))).toThrow(/not JSON/);
  });

  it('fails a missing required header, a content type the document does not name, and a body where it describes none', () => {
    expect(() => expectDocumented(call('GET', '/api/v1/published/workflows'), answer(429, { detail: 'Rate limit' }))).toThrow(
      /Retry-After is missing/,
    );
    // The webhook API's document does not require it: the HTTP API's own 429 and 503 come without one.
    expect(() => expectDocumented(call('GET', '/api/v1/webhooks/whk_x/ping'), answer(429, { message: 'Too Many Requests' }))).not.toThrow();
    expect(() =>
      expectDocumented(
        call('GET', '/api/v1/webhooks/whk_x/ping'),
        answer(429, { error: 'Rate limit' }, { ...JSON_TYPE, 'retry-after': 'soon' }),
      ),
    ).toThrow(/Retry-After/);
    expect(() =>
      expectDocumented(call('POST', '/api/v1/published/workflows/w/execute'), answer(200, { ...STATUS, poll_url: null })),
    ).toThrow(/X-Execution-Id is missing/);
    expect(() =>
      expectDocumented(call('GET', '/api/v1/published/workflows'), answer(401, { detail: 'no key' }, { 'content-type': 'text/plain' })),
    ).toThrow(/content-type text\/plain/);
    expect(() => expectDocumented(call('GET', '/api/v1/published/executions/e/stream'), answer(204, 'x', {}))).toThrow(/describes no body/);
  });

  it("checks each server-sent event and its data against the event's schema", () => {
    const path = '/api/v1/published/executions/e/stream';
    expect(() => expectDocumented(call('GET', path), stream(`: keep-alive\n\n${START}`))).not.toThrow();
    expect(() => expectDocumented(call('GET', path), stream('id: 2\nevent: token\ndata: {"content":1,"node_id":"n"}\n\n'))).toThrow(
      /token data/,
    );
    expect(() => expectDocumented(call('GET', path), stream('id: 2\nevent: surprise\ndata: {}\n\n'))).toThrow(/does not match/);
    expect(() => expectDocumented(call('GET', path), stream('event: token\ndata: {"content":"a","node_id":"n"}\n\n'))).toThrow(
      /does not match/,
    );
    expect(() => expectDocumented(call('GET', path), stream('id: 2\nevent: token\ndata: not json\n\n'))).toThrow(/not JSON/);
    // The lifecycle stream has events of its own: a stream event there is not one of them.
    expect(() => expectDocumented(call('GET', '/api/v1/published/executions/e/events'), stream(START))).toThrow(/does not match/);
    // A stream is checked event by event as it arrives.
    const check = documentedAnswer(call('POST', '/api/v1/published/workflows/w/stream'), {
      status: 200,
      headers: { ...STREAM_HEADERS, 'x-execution-id': 'e', 'content-location': '/x' },
    });
    expect(() => check.event({ id: '1', event: 'start', data: '{"execution_id":"e","thread_id":"t","workflow_id":"w"}' })).not.toThrow();
    expect(() => check.event({ id: '2', event: 'complete', data: '{"output":null}' })).toThrow(/complete data/);
    expect(parseEventStream(START)).toEqual([{ id: '1', event: 'start', data: '{"execution_id":"e","thread_id":"t","workflow_id":"w"}' }]);
  });

  it('fails an operation the document does not have, unless the test says why it sends it; even then only a refusal in the error shape passes', () => {
    const unknown = call('GET', '/api/v1/published/no-such-thing');
    const gateway = answer(404, { error: 'Not Found', detail: 'Not Found' });
    expect(() => expectDocumented(unknown, gateway)).toThrow(/has no operation GET/);
    expect(() => expectDocumented(call('DELETE', '/api/v1/published/workflows'), gateway)).toThrow(/has no operation DELETE/);
    expect(() => expectDocumented(unknown, gateway, 'a path the API does not have')).not.toThrow();
    expect(() => expectDocumented(call('GET', '/dev/api/v1/published/workflows'), gateway, 'another stage')).not.toThrow();
    expect(() => expectDocumented(unknown, answer(404, { message: 'Not Found' }), 'a path the API does not have')).toThrow(/error body/);
    expect(() =>
      expectDocumented(call('GET', '/api/v1/webhooks/x/nope'), answer(404, { detail: 'Not Found' }), 'a path the API does not have'),
    ).toThrow(/error body/);
    expect(() => expectDocumented(unknown, answer(200, {}), 'a path the API does not have')).toThrow(/must be refused/);
  });

  it('holds a CORS preflight to the Fetch standard: 204 with the allow headers and no body, or a refusal in the error shape', () => {
    const preflight = call('OPTIONS', '/prod/api/v1/published/workflows');
    const allowed = {
      'access-control-allow-origin': 'https://a.example',
      'access-control-allow-methods': 'GET, OPTIONS',
      'access-control-allow-headers': 'authorization',
    };
    expect(() => expectDocumented(preflight, answer(204, '', allowed))).not.toThrow();
    expect(() => expectDocumented(preflight, answer(403, { detail: 'This origin may not call the API from a browser' }))).not.toThrow();
    expect(() => expectDocumented(preflight, answer(204, '', { 'access-control-allow-origin': 'https://a.example' }))).toThrow(
      /access-control-allow-methods/,
    );
    expect(() => expectDocumented(preflight, answer(204, 'x', allowed))).toThrow(/with a body/);
    expect(() => expectDocumented(preflight, answer(200, '', allowed))).toThrow(/preflight is answered 204/);
    expect(() => expectDocumented(preflight, answer(403, { error: 'no' }))).toThrow(/detail/);
  });

  it('leaves alone what is not an answer of either API (a callback receiver, a presigned URL, a probe server)', () => {
    expect(() => expectDocumented(call('POST', '/hooks/run-ended'), answer(418, 'anything', {}))).not.toThrow();
    expect(() => expectDocumented(call('GET', '/api/v1/things/a'), answer(200, 'x', {}))).not.toThrow();
  });
});
