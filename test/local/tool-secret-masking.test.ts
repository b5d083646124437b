import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_TOOL_RESULT_BYTES } from '#shared/limits.ts';
import type { StreamEventBuffer } from '#executions/stream-event-log.ts';
import type { StreamEvent } from '#executions/stream-events.ts';
import { emptyUsage } from '#executions/execution-usage.ts';
import { runAgent, type AgentAssignment } from '#engine/agent-runner.ts';
import type { AgentModel, TranscriptMessage } from '#engine/agents/agent-model.ts';
import { scriptedAgentModel } from '#engine/agents/scripted-agent.ts';
import { createToolKit } from '#engine/tools/toolbox.ts';
import type { ToolAnswer } from '#engine/tools/tool-types.ts';
import { workflowShape, type WorkflowDefinition } from '#workflows/definition-schema.ts';
import { startMcpServer } from '../support/mcp-server.ts';
import { ECHO_ENCODINGS, echoOf, leaksOf } from '../support/secret-echo.ts';

/**
 * Tool secrets echoed back by careless tools, in every form a server might use, through the real tool kit (pinned
 * fetch, the official MCP client) against a local HTTP server and an MCP server built with the official SDK, and
 * through the agent loop: the result the model is given, the `tool_call` events and the agent's output hold none of
 * them, nor the start of one.
 */
// A quote, a backslash, a slash (JSON escapes), a space and a plus (form encoding).
const KEY = 'p"ss\\w0rd/x y+z';
// A control character (JSON's \t or \u0009): a tab is the only one a header carries, and a URL none.
const CTL = 'c\tt"l/ab';
// In the URL's query (no spaces or backslashes there), which its parser leaves partly encoded: the quote and the
// angle brackets, not the slash or the plus.
const URL_KEY = 'u"rl/k+y<z>';
const VALUES: Record<string, string> = { KEY, CTL, URL_KEY };
const kit = createToolKit({
  allowLoopback: true,
  secrets: {
    values: (_project, names) =>
      Promise.resolve(new Map(names.filter((name) => Object.hasOwn(VALUES, name)).map((name) => [name, VALUES[name]!]))),
  },
});

let http: Server;
let httpUrl: string;
const httpHeaders: IncomingHttpHeaders[] = [];
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  http = createServer((request, response) => {
    httpHeaders.push(request.headers);
    const url = new URL(request.url!, 'http://echo');
    const echo = echoOf(
      decodeURIComponent(url.pathname.split('/').at(-1)!),
      String(request.headers['x-key'] ?? ''),
      String(request.headers['x-ctl'] ?? ''),
      request.url!,
    );
    response.writeHead(echo.status, { 'content-type': echo.type }).end(echo.body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  mcp = await startMcpServer({ sessions: true });
});
afterAll(async () => {
  await mcp?.close();
  http?.closeAllConnections();
  await new Promise((resolve) => http?.close(resolve));
});

function definition(): WorkflowDefinition {
  const agent = (tool: string, entry: string) => ({
    type: 'agent',
    provider: 'scripted',
    tools: [entry],
    next: 'done',
    script: [
      { tool_calls: [{ tool, arguments: { encoding: '{{input.encoding}}' } }] },
      { reply: 'The tool said {{tool_results.' + tool + '}}' },
    ],
  });
  return workflowShape.parse({
    id: 'echo',
    name: 'Echo',
    start: 'http',
    tools: {
      echo: {
        type: 'http',
        url: `${httpUrl}/echo/{{args.encoding}}?u={{secret.URL_KEY}}`,
        headers: { 'x-key': '{{secret.KEY}}', 'x-ctl': '{{secret.CTL}}' },
        parameters: { type: 'object', properties: { encoding: { type: 'string' } }, required: ['encoding'] },
      },
      crm: {
        type: 'mcp',
        url: `${mcp.url}?u={{secret.URL_KEY}}`,
        headers: { 'x-key': '{{secret.KEY}}', 'x-ctl': '{{secret.CTL}}' },
        tools: ['echo_key'],
      },
    },
    nodes: { http: agent('echo', 'echo'), mcp: agent('echo_key', 'crm'), done: { type: 'end', output: '{{nodes.http.output}}' } },
  });
}

/** Runs one agent through the real tool kit, keeping what its model was given on each turn. */
async function runEcho(nodeId: 'http' | 'mcp', encoding: string) {
  const workflow = definition();
  const events: StreamEvent[] = [];
  const seen: TranscriptMessage[][] = [];
  const model: AgentModel = {
    turn(request) {
      seen.push(structuredClone([...request.transcript]));
      return scriptedAgentModel.turn(request);
    },
  };
  const run: AgentAssignment = {
    definition: workflow,
    projectId: 'p',
    nodeId,
    node: workflow.nodes[nodeId] as AgentAssignment['node'],
    scope: { input: { encoding }, memory: {}, nodes: {}, approval: null, history: '' },
    events: {
      push: (event: StreamEvent) => void events.push(event),
      flush: () => Promise.resolve('appended'),
    } as unknown as StreamEventBuffer,
    usage: emptyUsage(),
  };
  const { output } = await runAgent(run, { models: { scripted: model, bedrock: model }, tools: kit });
  const answer = seen[1]!.at(-1)!.content.flatMap((block) => ('toolResult' in block ? [block.toolResult.answer] : []))[0]!;
  return { answer, events: events.filter((event) => event.type === 'tool_call'), output };
}

function expectNoLeak(ran: Awaited<ReturnType<typeof runEcho>>) {
  for (const secret of [KEY, CTL, URL_KEY]) {
    expect(leaksOf(JSON.stringify(ran.answer), secret), 'the result given to the model').toEqual([]);
    expect(leaksOf(JSON.stringify(ran.events), secret), 'the tool_call events').toEqual([]);
    expect(leaksOf(ran.output, secret), 'the output').toEqual([]);
  }
  // The tool did echo something, and it came back masked (the mark itself may be cut).
  expect(JSON.stringify(ran.answer)).toContain('[secr');
}

const answerText = (answer: ToolAnswer) =>
  answer.ok ? (typeof answer.result === 'string' ? answer.result : JSON.stringify(answer.result)) : answer.error;

describe('secrets echoed by an HTTP tool', () => {
  for (const encoding of ECHO_ENCODINGS) {
    it(`masks them echoed as ${encoding}`, async () => {
      const ran = await runEcho('http', encoding);
      expect(httpHeaders.at(-1)!['x-key']).toBe(KEY);
      expectNoLeak(ran);
    });
  }

  it('gives the parsed JSON back with the secret masked in its strings', async () => {
    expect((await runEcho('http', 'json')).answer).toEqual({ ok: true, result: { key: '[secret]', ctl: '[secret]' } });
    expect((await runEcho('http', 'json-keys')).answer).toEqual({
      ok: true,
      result: { '[secret]': 'as a key', deep: [{ a: { '[secret]': [['[secret]']] } }] },
    });
  });

  it('masks a secret in the request URL as the URL parser sent it, and inside a longer base64 text', async () => {
    expect((await runEcho('http', 'request-url')).answer).toEqual({ ok: true, result: { url: '/echo/request-url?u=[secret]' } });
    const inside = (await runEcho('http', 'base64-inside')).answer as { ok: true; result: { authorization: string; blob: string } };
    expect(inside.result.authorization).toMatch(/^Basic [A-Za-z0-9+/]{6,8}\[secret\][A-Za-z0-9+/=]{0,4}$/);
    expect(inside.result.blob).toMatch(/^[A-Za-z0-9+/]{2,4}\[secret\][A-Za-z0-9+/=]{0,6}$/);
  });

  it('masks error bodies', async () => {
    expect((await runEcho('http', 'error-text')).answer).toEqual({ ok: false, error: 'HTTP 500: rejected key [secret] and [secret]' });
    expect((await runEcho('http', 'error-json')).answer).toEqual({
      ok: false,
      error: 'HTTP 401: {"error":"bad key","key":"[secret]","ctl":"[secret]"}',
    });
  });

  it('masks before the 64 KB cut, so a secret across the cut leaves none of its start', async () => {
    const straddling = await runEcho('http', 'over-limit-text');
    expect(straddling.answer).toEqual({ ok: true, result: `${'x'.repeat(MAX_TOOL_RESULT_BYTES - 5)}[secr` });
    // Back to back, the secrets are one execution and one mark; the read ends inside a secret, whose start is dropped.
    expect((await runEcho('http', 'over-limit-repeated')).answer).toEqual({ ok: true, result: '[secret]' });
  });
});

describe('secrets echoed by an MCP tool', () => {
  for (const encoding of [...ECHO_ENCODINGS, 'structured', 'multi', 'throw', 'http-error']) {
    it(`masks them echoed as ${encoding}`, async () => {
      const ran = await runEcho('mcp', encoding);
      // An http-error is the HTTP request failing before the tool runs.
      if (encoding !== 'http-error')
        expect(mcp.calls.at(-1)).toMatchObject({ tool: 'echo_key', args: { encoding }, headers: { 'x-key': KEY } });
      expectNoLeak(ran);
    });
  }

  it('gives the structured content back with the secret masked in its keys and strings', async () => {
    expect((await runEcho('mcp', 'structured')).answer).toEqual({ ok: true, result: { '[secret]': { key: '[secret]', ctl: '[secret]' } } });
    expect((await runEcho('mcp', 'json-unicode-escapes')).answer).toEqual({ ok: true, result: { key: '[secret]', ctl: '[secret]' } });
    expect((await runEcho('mcp', 'request-url')).answer).toEqual({ ok: true, result: { url: '/mcp?u=[secret]' } });
  });

  it('masks errors: isError text, a thrown tool error, and a failed request quoting its body', async () => {
    expect((await runEcho('mcp', 'error-text')).answer).toEqual({ ok: false, error: 'rejected key [secret] and [secret]' });
    expect((await runEcho('mcp', 'throw')).answer).toEqual({ ok: false, error: 'cannot use [secret] or [secret]' });
    const failed = await runEcho('mcp', 'http-error');
    expect(failed.answer).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^Error: Streamable HTTP error: Error POSTing to endpoint: z{245}\[secret\]/),
    });
  });

  it('masks before the 64 KB cut, so a secret across the cut leaves none of its start', async () => {
    expect((await runEcho('mcp', 'over-limit-text')).answer).toEqual({ ok: true, result: `${'x'.repeat(MAX_TOOL_RESULT_BYTES - 5)}[secr` });
    const json = answerText((await runEcho('mcp', 'over-limit-json')).answer);
    expect(Buffer.byteLength(json, 'utf8')).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES);
    expect((await runEcho('mcp', 'over-limit-repeated')).answer).toEqual({ ok: true, result: '[secret]' });
  });

  it("masks a secret the server writes into a tool's description", async () => {
    const toolbox = kit.open({ definition: definition(), toolNames: ['crm'], projectId: 'p' });
    try {
      const described = await toolbox.describe();
      expect(described.map((tool) => tool.name)).toEqual(['echo_key']);
      expect(described[0]!.description).toBe('Echoes the key [secret]');
    } finally {
      await toolbox.close();
    }
  });
});
