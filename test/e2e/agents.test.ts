import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../support/published.ts';
import { refusedAdmin, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { openSse, tokensOf } from '../support/sse.ts';

/**
 * Agents end to end on the twin: scripted agents calling HTTP tools on a local server (allowed on loopback by the
 * test-only ALLOW_LOOPBACK_TOOLS, as callbacks are), failing tools, hand-offs, and the turn limit.
 */
let twin: TestTwin;
let key: string;
let toolServer: Server;
let toolUrl: string;
const toolRequests: { method: string; url: string; body: string }[] = [];

function weatherAnswer(request: IncomingMessage, body: string) {
  toolRequests.push({ method: request.method!, url: request.url!, body });
  if (request.url!.startsWith('/weather')) {
    const city = new URL(request.url!, 'http://x').searchParams.get('city');
    return { status: 200, body: JSON.stringify({ city, summary: `sunny in ${city}`, celsius: 21 }) };
  }
  return { status: 500, body: 'broken' };
}

const agentWorkflow = (url: string) => ({
  id: 'helpdesk',
  name: 'Helpdesk',
  start: 'triage',
  tools: {
    weather: {
      type: 'http',
      description: 'Current weather for a city',
      method: 'GET',
      url: `${url}/weather?city={{args.city}}`,
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      timeout_ms: 2000,
    },
    broken: { type: 'http', method: 'POST', url: `${url}/broken` },
  },
  nodes: {
    triage: {
      type: 'agent',
      provider: 'scripted',
      tools: ['weather', 'broken'],
      script: [
        {
          tool_calls: [
            { tool: 'weather', arguments: { town: 'x' } },
            { tool: 'broken', arguments: {} },
          ],
        },
        { tool_calls: [{ tool: 'weather', arguments: { city: '{{input.city}}' } }] },
        { reply: 'Weather: {{tool_results.weather.summary}} ({{tool_results.broken.error}})' },
      ],
      next: 'done',
    },
    done: { type: 'end', output: '{{nodes.triage.output}}' },
  },
});

const handoffWorkflow = {
  id: 'desk',
  name: 'Desk',
  start: 'front',
  nodes: {
    front: { type: 'agent', provider: 'scripted', handoffs: ['billing'], script: [{ handoff: 'billing' }], next: 'done' },
    billing: { type: 'agent', provider: 'scripted', script: [{ reply: 'Billing here: {{input.message}}' }], next: 'done' },
    done: { type: 'end', output: { answer: '{{nodes.billing.output}}', front: '{{nodes.front.output}}' } },
  },
};

const spinnerWorkflow = (url: string) => ({
  id: 'spinner',
  name: 'Spinner',
  start: 'a',
  tools: { weather: agentWorkflow(url).tools.weather },
  nodes: {
    a: {
      type: 'agent',
      provider: 'scripted',
      tools: ['weather'],
      max_turns: 2,
      next: 'done',
      script: [1, 2].map(() => ({ tool_calls: [{ tool: 'weather', arguments: { city: 'Oslo' } }] })).concat([{ reply: 'never' } as never]),
    },
    done: { type: 'end', output: '{{nodes.a.output}}' },
  },
});

function publishWorkflows(workflows: object[]) {
  const dir = mkdtempSync(join(tmpdir(), 'agents-'));
  workflows.forEach((workflow, i) => writeFileSync(join(dir, `w${i}.json`), JSON.stringify(workflow)));
  return dir;
}

beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_TOOLS = '1';
  toolServer = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      const answer = weatherAnswer(request, body);
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => toolServer.listen(0, '127.0.0.1', resolve));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
  twin = await startTestTwin();
  await twin.admin('publish', publishWorkflows([agentWorkflow(toolUrl), handoffWorkflow, spinnerWorkflow(toolUrl)]), '--project', 'agents');
  key = (await createKey(twin, 'full', { project: 'agents' })).key;
});
afterAll(async () => {
  await twin?.close();
  await new Promise((resolve) => toolServer?.close(resolve));
});

const stream = (workflowId: string, body: object) =>
  openSse(`${twin.url}/api/v1/published/workflows/${workflowId}/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body,
  });

describe('agents with tools and hand-offs', () => {
  it('calls an HTTP tool with the rendered arguments, streams tool_call events, and replies with its result', async () => {
    const run = await stream('helpdesk', { user_id: 'u', input: { city: 'Saint Petersburg' } });
    await run.ended;
    const calls = run.events.filter((event) => event.event === 'tool_call');
    expect(calls.map((event) => [event.data.tool, event.data.status])).toEqual([
      ['weather', 'started'],
      ['weather', 'failed'],
      ['broken', 'started'],
      ['broken', 'failed'],
      ['weather', 'started'],
      ['weather', 'succeeded'],
    ]);
    // Invalid arguments never reach the tool; a failing tool is an answer for the model, and the execution goes on.
    expect(calls[1]!.data.error).toMatch(/^invalid arguments: .*city/);
    expect(calls[3]!.data.error).toMatch(/^HTTP 500/);
    expect(calls[4]!.data).toEqual({
      node_id: 'triage',
      call_id: expect.any(String),
      tool: 'weather',
      arguments: { city: 'Saint Petersburg' },
      status: 'started',
    });
    expect(calls[5]!.data).toMatchObject({
      call_id: calls[4]!.data.call_id,
      result: { city: 'Saint Petersburg', summary: 'sunny in Saint Petersburg', celsius: 21 },
      duration_ms: expect.any(Number),
    });
    expect(toolRequests.filter((request) => request.url.startsWith('/weather'))).toEqual([
      { method: 'GET', url: '/weather?city=Saint%20Petersburg', body: '' },
    ]);

    // `{{tool_results.<tool>}}` is each tool's latest result, as the model saw it.
    const reply = 'Weather: sunny in Saint Petersburg (HTTP 500: broken)';
    expect(tokensOf(run.events, 'triage')).toBe(reply);
    expect(run.events.at(-1)!.data).toMatchObject({ status: 'completed', output: reply });
  });

  it("hands off to another agent, whose reply is the execution's answer", async () => {
    const run = await stream('desk', { user_id: 'u', input: { message: 'refund please' } });
    await run.ended;
    expect(run.events.find((event) => event.event === 'agent_handoff')!.data).toEqual({ from: 'front', to: 'billing' });
    expect(tokensOf(run.events, 'billing')).toBe('Billing here: refund please');
    expect(run.events.at(-1)!.data).toMatchObject({
      status: 'completed',
      output: { answer: 'Billing here: refund please', front: 'Billing here: refund please' },
    });
  });

  it('fails the execution clearly when an agent uses its turns without a reply', async () => {
    const run = await stream('spinner', { user_id: 'u' });
    await run.ended;
    expect(run.events.filter((event) => event.event === 'tool_call' && event.data.status === 'succeeded')).toHaveLength(2);
    expect(run.events.at(-1)!.data).toMatchObject({ status: 'failed', error: 'Agent a used its 2 turns without a reply' });
  });

  it('refuses to publish unknown tools, unknown hand-off targets and private tool URLs, naming the field', async () => {
    const refused = async (workflow: object) => (await refusedAdmin('publish', publishWorkflows([workflow]), '--project', 'bad')).error;
    const base = agentWorkflow(toolUrl);
    expect(await refused({ ...base, nodes: { ...base.nodes, triage: { ...base.nodes.triage, tools: ['weather', 'nope'] } } })).toMatch(
      /nodes\.triage\.tools\.1: unknown tool "nope"/,
    );
    expect(await refused({ ...base, nodes: { ...base.nodes, triage: { ...base.nodes.triage, handoffs: ['done'] } } })).toMatch(
      /nodes\.triage\.handoffs\.0: "done" is not an agent node/,
    );
    const previous = process.env.ALLOW_LOOPBACK_TOOLS;
    delete process.env.ALLOW_LOOPBACK_TOOLS;
    try {
      expect(await refused({ ...base, tools: { ...base.tools, meta: { type: 'http', url: 'https://169.254.169.254/latest' } } })).toMatch(
        /tools\.meta\.url: /,
      );
      expect(await refused(base)).toMatch(/tools\.weather\.url: scheme must be https/);
    } finally {
      process.env.ALLOW_LOOPBACK_TOOLS = previous;
    }
  });
});
