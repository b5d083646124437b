import { describe, expect, it } from 'vitest';
import { executionLine, parseTwinLog, requestLine, shownExecutionName, shownPath, twinLogSinks } from '#lib/twin/twin-log.ts';

/** The lines `npm start` prints: what they show of a request or an execution, and what they never show. */
const TOKEN = 'whk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd';
const EXECUTION_ID = '3f2a9c1e-7b4d-4e1a-9c2b-5d6e7f8a9b0c';
const AT = new Date(2026, 0, 2, 3, 4, 5, 6);

describe('the twin log', () => {
  it('cuts a webhook token to what links list shows of it, wherever it sits in the path', () => {
    expect(shownPath(`/prod/api/v1/webhooks/${TOKEN}/events`)).toBe('/prod/api/v1/webhooks/whk_AbCdEf…/events');
    expect(shownPath(`/api/v1/webhooks/${TOKEN}/no-such-thing`)).toBe('/api/v1/webhooks/whk_AbCdEf…/no-such-thing');
    // Mistyped or encoded, a secret is still longer than any word of the route table.
    expect(shownPath(`/api/v1/webhooks/whk%5F${TOKEN.slice(4)}/ping`)).toBe('/api/v1/webhooks/whk%5FAb…/ping');
  });

  it('shows an execution id by its first 8 characters and keeps workflow ids and the route words', () => {
    expect(shownPath(`/api/v1/published/executions/${EXECUTION_ID}/approve`)).toBe('/api/v1/published/executions/3f2a9c1e…/approve');
    expect(shownPath('/api/v1/published/workflows/support-bot/execute')).toBe('/api/v1/published/workflows/support-bot/execute');
  });

  it("shows a query by its shape only: its names are the caller's data, as its values are", () => {
    expect(shownPath(`/api/v1/webhooks/${TOKEN}/ping?token=${TOKEN}&after=3&flag`)).toBe('/api/v1/webhooks/whk_AbCdEf…/ping?…=…&…=…&…');
    expect(shownPath('/api/v1/published/workflows?QSECRETname8842&api_key=sk-live-1')).toBe('/api/v1/published/workflows?…&…=…');
    expect(shownPath(`/ping?${TOKEN}`)).toBe('/ping?…');
    expect(shownPath('/ping?')).toBe('/ping?');
    expect(shownPath('/ping?a=1&&b')).toBe('/ping?…=…&&…');
    const served = {
      method: 'GET',
      url: '/api/v1/published/workflows?QSECRETname8842=1',
      status: 200,
      functionName: 'PublishedListWorkflows',
      cold: false,
      streaming: false,
      finished: true,
      durationMs: 5,
    };
    expect(requestLine(served, AT)).toBe('03:04:05.006 GET /api/v1/published/workflows?…=… 200 PublishedListWorkflows 5 ms');
  });

  it('never lets a control byte start a line of its own', () => {
    expect(shownPath('/api/\r\n12:00:00.000 GET /forged')).toBe('/api/??12:00:00.000 GET /forged');
  });

  it('writes a request line with time, method, path, status, function, duration and its marks', () => {
    const served = {
      method: 'POST',
      url: `/prod/api/v1/webhooks/${TOKEN}/events`,
      status: 201,
      functionName: 'WebhookPostEvent',
      cold: true,
      streaming: false,
      finished: true,
      durationMs: 84.4,
    };
    expect(requestLine(served, AT)).toBe('03:04:05.006 POST /prod/api/v1/webhooks/whk_AbCdEf…/events 201 WebhookPostEvent 84 ms cold');
    expect(requestLine({ ...served, url: '/nope', status: 404, functionName: undefined, cold: false, durationMs: 0.3 }, AT)).toBe(
      '03:04:05.006 POST /nope 404 - 0 ms',
    );
    const stream = {
      method: 'GET',
      url: `/api/v1/published/executions/${EXECUTION_ID}/events`,
      status: 200,
      functionName: 'PublishedExecutionEvents',
      cold: false,
      streaming: true,
      finished: false,
      durationMs: 19_240,
    };
    expect(requestLine(stream, AT)).toBe(
      '03:04:05.006 GET /api/v1/published/executions/3f2a9c1e…/events 200 PublishedExecutionEvents 19.2 s stream unfinished',
    );
    expect(requestLine({ ...stream, status: undefined }, AT)).toContain(' - PublishedExecutionEvents ');
  });

  it('writes a line as an execution starts and as it ends, with its status, error name and duration', () => {
    const machine = 'arn:aws:states:us-east-1:000000000000:stateMachine:local-workflow';
    const started = {
      event: 'started' as const,
      stateMachineArn: machine,
      name: EXECUTION_ID,
      status: 'RUNNING' as const,
      startDate: AT.getTime() - 19_100,
    };
    expect(executionLine(started, AT)).toBe('03:04:05.006 SFN local-workflow 3f2a9c1e… started');
    expect(executionLine({ ...started, event: 'resumed' }, AT)).toBe('03:04:05.006 SFN local-workflow 3f2a9c1e… resumed');
    expect(executionLine({ ...started, event: 'ended', status: 'SUCCEEDED', stopDate: AT.getTime() }, AT)).toBe(
      '03:04:05.006 SFN local-workflow 3f2a9c1e… SUCCEEDED 19.1 s',
    );
    expect(
      executionLine({ ...started, event: 'ended', status: 'FAILED', error: 'States.Timeout', stopDate: AT.getTime() - 18_900 }, AT),
    ).toBe('03:04:05.006 SFN local-workflow 3f2a9c1e… FAILED (States.Timeout) 200 ms');
    expect(shownExecutionName(`collect-tsk_AbCdEfGhIjKl-manual-${EXECUTION_ID}`)).toBe('collect-tsk_AbCdEfGhIjKl-manual-3f2a9c1e…');
    expect(shownExecutionName(`callback-${EXECUTION_ID}`)).toBe('callback-3f2a9c1e…');
  });

  it('reads TWIN_LOG as a level, requests by default, and refuses anything else', () => {
    expect(parseTwinLog(undefined)).toBe('requests');
    expect(parseTwinLog('Executions')).toBe('executions');
    expect(parseTwinLog('off')).toBe('off');
    expect(() => parseTwinLog('debug')).toThrow('TWIN_LOG must be one of requests, executions, off, got debug');
    const write = () => undefined;
    expect(twinLogSinks('requests', write)).toEqual({ onRequestLine: write, onExecutionLine: write, onFaultLine: write });
    expect(twinLogSinks('executions', write)).toEqual({ onRequestLine: undefined, onExecutionLine: write });
    expect(twinLogSinks('off', write)).toEqual({ onRequestLine: undefined, onExecutionLine: undefined });
  });
});
