import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, GetObjectCommand } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { scriptedImageModel } from '#engine/images/scripted-image.ts';
import { documentedFetch } from '../support/fetch.ts';
import { createKey } from '../support/published.ts';
import { refusedAdmin, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { startMcpServer } from '../support/mcp-server.ts';
import { leaksOf } from '../support/secret-echo.ts';
import { openSse, tokensOf } from '../support/sse.ts';

/**
 * Agents' MCP tools (a local server built with the official SDK), secrets in tool headers, generated images, and
 * the usage counters, end to end on the twin.
 */
const PROJECT = 'tools';
const CRM_SECRET = 'crm-secret-5f0c9a1e7d';
const WEATHER_SECRET = 'weather-secret-77aa31';
// JSON escapes both the quote and the backslash, so an echo of it in a JSON body never holds it as it is.
const LEAKY_SECRET = 'p"ss\\w0rd/x';
let twin: TestTwin;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
let sessionsMcp: Awaited<ReturnType<typeof startMcpServer>>;
let echoServer: Server;
let echoUrl: string;
const echoed: IncomingHttpHeaders[] = [];

const crmWorkflow = (mcpUrl: string) => ({
  id: 'crm',
  name: 'CRM',
  start: 'agent',
  tools: { crm: { type: 'mcp', url: mcpUrl, headers: { 'x-crm-key': '{{secret.CRM_KEY}}' }, tools: ['lookup_customer', 'explode'] } },
  nodes: {
    agent: {
      type: 'agent',
      provider: 'scripted',
      tools: ['crm'],
      next: 'done',
      script: [
        { tool_calls: [{ tool: 'lookup_customer', arguments: { id: 42 } }] },
        {
          tool_calls: [
            { tool: 'lookup_customer', arguments: { id: '{{input.customer}}' } },
            { tool: 'explode', arguments: {} },
          ],
        },
        { reply: '{{tool_results.lookup_customer.name}} is {{tool_results.lookup_customer.tier}}; {{tool_results.explode.error}}' },
      ],
    },
    done: { type: 'end', output: '{{nodes.agent.output}}' },
  },
});

const weatherWorkflow = (url: string) => ({
  id: 'weather',
  name: 'Weather',
  start: 'agent',
  tools: {
    weather: { type: 'http', url: `${url}/weather?key={{secret.WEATHER_KEY}}`, headers: { 'x-api-key': '{{secret.WEATHER_KEY}}' } },
    unset: { type: 'http', url: `${url}/unset`, headers: { authorization: 'Bearer {{secret.NOT_SET}}' } },
  },
  nodes: {
    agent: {
      type: 'agent',
      provider: 'scripted',
      tools: ['weather', 'unset'],
      next: 'done',
      script: [
        {
          tool_calls: [
            { tool: 'weather', arguments: {} },
            { tool: 'unset', arguments: {} },
          ],
        },
        { reply: 'It is {{tool_results.weather.sky}}.' },
      ],
    },
    done: { type: 'end', output: { reply: '{{nodes.agent.output}}', raw: '{{tool_results.weather}}' } },
  },
});

/** Careless tools, HTTP and MCP (with sessions), echoing a key that JSON escapes. */
const leakyWorkflow = (url: string, mcpUrl: string) => ({
  id: 'leaky',
  name: 'Leaky',
  start: 'agent',
  tools: {
    echo: { type: 'http', url: `${url}/leaky`, headers: { 'x-api-key': '{{secret.LEAKY_KEY}}' } },
    crm: { type: 'mcp', url: mcpUrl, headers: { 'x-key': '{{secret.LEAKY_KEY}}' }, tools: ['echo_key'] },
  },
  nodes: {
    agent: {
      type: 'agent',
      provider: 'scripted',
      tools: ['echo', 'crm'],
      next: 'done',
      script: [
        {
          tool_calls: [
            { tool: 'echo', arguments: {} },
            { tool: 'echo_key', arguments: { encoding: 'base64' } },
            { tool: 'echo_key', arguments: { encoding: 'json' } },
          ],
        },
        { reply: 'Echoed {{tool_results.echo}} and {{tool_results.echo_key}}' },
      ],
    },
    done: { type: 'end', output: { reply: '{{nodes.agent.output}}' } },
  },
});

const drawWorkflow = {
  id: 'draw',
  name: 'Draw',
  start: 'draw',
  nodes: {
    draw: { type: 'image', provider: 'scripted', prompt: 'A {{input.message}}', width: 64, height: 48, next: 'done' },
    done: { type: 'end', output: '{{nodes.draw.output}}' },
  },
};

const bedrockWorkflow = (model: string) => ({
  id: `bedrock-${model.replace(/[^A-Za-z0-9]/g, '-')}`,
  name: 'Bedrock',
  start: 'front',
  nodes: {
    front: { type: 'agent', provider: 'bedrock', model_id: model, instructions: 'Triage.', handoffs: ['closer'], next: 'picture' },
    closer: { type: 'agent', provider: 'bedrock', model_id: model, instructions: 'Close.', next: 'picture' },
    // No Bedrock image model is served (Nova Canvas has ended): the picture is the scripted provider's.
    picture: { type: 'image', provider: 'scripted', prompt: 'A lighthouse', width: 320, height: 320, seed: 7, next: 'done' },
    done: { type: 'end', output: { reply: '{{nodes.closer.output}}', picture: '{{nodes.picture.output.key}}' } },
  },
});

function definitionsDir(workflows: object[]) {
  const dir = mkdtempSync(join(tmpdir(), 'agents-tools-'));
  workflows.forEach((workflow, i) => writeFileSync(join(dir, `w${i}.json`), JSON.stringify(workflow)));
  return dir;
}

async function setSecret(name: string, value: string, project = PROJECT) {
  const result = await runCli(['secrets', 'set', name, '--project', project, '--json'], { stdin: () => Promise.resolve(`${value}\n`) });
  expect(result.exitCode, result.stdout).toBe(0);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_TOOLS = '1';
  mcp = await startMcpServer();
  sessionsMcp = await startMcpServer({ sessions: true });
  // A careless tool that echoes the key it was sent: the agent must not pass it on.
  echoServer = createServer((request, response) => {
    echoed.push(request.headers);
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ sky: 'clear', echo: request.headers['x-api-key'], url: request.url }));
  });
  await new Promise<void>((resolve) => echoServer.listen(0, '127.0.0.1', resolve));
  echoUrl = `http://127.0.0.1:${(echoServer.address() as AddressInfo).port}`;
  twin = await startTestTwin();
  const workflows = [
    crmWorkflow(mcp.url),
    weatherWorkflow(echoUrl),
    drawWorkflow,
    bedrockWorkflow('amazon.nova-lite-v1:0'),
    bedrockWorkflow('eu.amazon.nova-pro-v1:0'),
  ];
  const published = [...workflows, leakyWorkflow(echoUrl, sessionsMcp.url)];
  await twin.admin('publish', definitionsDir(published), '--project', PROJECT);
  key = (await createKey(twin, 'full', { project: PROJECT })).key;
  await setSecret('CRM_KEY', CRM_SECRET);
  await setSecret('WEATHER_KEY', WEATHER_SECRET);
  await setSecret('LEAKY_KEY', LEAKY_SECRET);
});
afterAll(async () => {
  await twin?.close();
  await mcp?.close();
  await sessionsMcp?.close();
  await new Promise((resolve) => echoServer?.close(resolve));
});

const stream = (workflowId: string, body: object) =>
  openSse(`${twin.url}/api/v1/published/workflows/${workflowId}/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body,
  });

async function rawStreamText(executionId: string): Promise<string> {
  const response = await documentedFetch(`${twin.url}/api/v1/published/executions/${executionId}/stream`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return response.text();
}

async function statusOf(executionId: string) {
  const response = await documentedFetch(`${twin.url}/api/v1/published/executions/${executionId}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, any>;
}

describe('secrets', () => {
  it('keeps a value set from stdin out of the admin output and lists names only', async () => {
    expect(await setSecret('SPARE', 'first')).toEqual({ project_id: PROJECT, name: 'SPARE', version: 1 });
    expect(await setSecret('SPARE', 'second')).toEqual({ project_id: PROJECT, name: 'SPARE', version: 2 });
    const listed = await twin.admin('secrets', 'list', '--project', PROJECT);
    expect(listed.secrets.map((secret: { name: string }) => secret.name).sort()).toEqual(['CRM_KEY', 'LEAKY_KEY', 'SPARE', 'WEATHER_KEY']);
    expect(JSON.stringify(listed)).not.toContain(CRM_SECRET);
    expect(await twin.admin('secrets', 'delete', 'SPARE', '--project', PROJECT)).toEqual({
      project_id: PROJECT,
      name: 'SPARE',
      deleted: true,
    });
    expect((await refusedAdmin('secrets', 'delete', 'SPARE', '--project', PROJECT)).error).toBe(`project ${PROJECT} has no secret SPARE`);
    const empty = await runCli(['secrets', 'set', 'X', '--project', PROJECT, '--json'], { stdin: () => Promise.resolve('') });
    expect(empty.exitCode).toBe(2);
  });
});

describe('MCP tools', () => {
  it('calls an allowed MCP tool with checked arguments, gives errors back to the model, and never passes a secret on', async () => {
    const run = await stream('crm', { user_id: 'u', input: { customer: 'c-7' } });
    await run.ended;
    const calls = run.events.filter((event) => event.event === 'tool_call');
    expect(calls.map((event) => [event.data.tool, event.data.status])).toEqual([
      ['lookup_customer', 'started'],
      ['lookup_customer', 'failed'],
      ['lookup_customer', 'started'],
      ['lookup_customer', 'succeeded'],
      ['explode', 'started'],
      ['explode', 'failed'],
    ]);
    // The listed schema says `id` is a string: 42 never reaches the server.
    expect(calls[1]!.data.error).toMatch(/^invalid arguments: .*id/);
    expect(mcp.calls.map((call) => [call.tool, call.args])).toEqual([
      ['lookup_customer', { id: 'c-7' }],
      ['explode', {}],
    ]);
    // The server got the secret in its header; its echo of it came back masked.
    expect(mcp.calls[0]!.headers['x-crm-key']).toBe(CRM_SECRET);
    expect(calls[3]!.data.result).toEqual({ id: 'c-7', name: 'Customer c-7', tier: 'gold', seen_key: '[secret]' });
    expect(calls[5]!.data.error).toBe('the CRM is down');
    const reply = 'Customer c-7 is gold; the CRM is down';
    expect(tokensOf(run.events, 'agent')).toBe(reply);
    const complete = run.events.at(-1)!.data;
    expect(complete).toMatchObject({ status: 'completed', output: reply });
    expect(complete.usage).toEqual({ model_calls: 3, input_tokens: 0, output_tokens: 8, tool_calls: 3, images: 0 });
    const status = await statusOf(complete.execution_id);
    expect(status.usage).toEqual(complete.usage);
    expect(await rawStreamText(complete.execution_id)).not.toContain(CRM_SECRET);
  });
});

describe('secrets in HTTP tools', () => {
  it('fills headers and URLs at call time, masks echoes, fails a missing secret, and stores the value nowhere', async () => {
    const run = await stream('weather', { user_id: 'u' });
    await run.ended;
    expect(echoed.at(-1)!['x-api-key']).toBe(WEATHER_SECRET);
    const calls = run.events.filter((event) => event.event === 'tool_call' && event.data.status !== 'started');
    expect(calls[0]!.data).toMatchObject({
      tool: 'weather',
      status: 'succeeded',
      result: { sky: 'clear', echo: '[secret]', url: '/weather?key=[secret]' },
    });
    expect(calls[1]!.data).toMatchObject({ tool: 'unset', status: 'failed', error: 'secret NOT_SET is not set for this project' });
    const complete = run.events.at(-1)!.data;
    expect(complete).toMatchObject({ status: 'completed', output: { reply: 'It is clear.' } });

    const executionId = complete.execution_id as string;
    expect(await rawStreamText(executionId)).not.toContain(WEATHER_SECRET);
    expect(JSON.stringify(await statusOf(executionId))).not.toContain(WEATHER_SECRET);
    for (const table of ['executions', 'userState', 'streamEvents'] as const) {
      const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables[table] }));
      expect(JSON.stringify(Items), table).not.toContain(WEATHER_SECRET);
    }
    const objects = await twin.s3.send(new ListObjectsV2Command({ Bucket: twin.twin.bucket, Prefix: `executions/${executionId}` }));
    for (const object of objects.Contents ?? []) {
      const body = await (
        await twin.s3.send(new GetObjectCommand({ Bucket: twin.twin.bucket, Key: object.Key! }))
      ).Body!.transformToString();
      expect(body, object.Key).not.toContain(WEATHER_SECRET);
    }
  });
});

describe('a secret that JSON escapes, echoed by HTTP and MCP tools', () => {
  it('reaches no event, replayed log, output, record or stored object, and every execution ends its MCP session', async () => {
    const runs = 4;
    for (let i = 0; i < runs; i += 1) {
      const run = await stream('leaky', { user_id: 'u' });
      await run.ended;
      expect(echoed.at(-1)!['x-api-key']).toBe(LEAKY_SECRET);
      expect(sessionsMcp.calls.at(-1)!.headers['x-key']).toBe(LEAKY_SECRET);
      const calls = run.events.filter((event) => event.event === 'tool_call' && event.data.status !== 'started');
      expect(calls.map((event) => event.data.result)).toEqual([
        { sky: 'clear', echo: '[secret]', url: '/leaky' },
        { key: '[secret]', ctl: '' },
        { key: '[secret]', ctl: '' },
      ]);
      const complete = run.events.at(-1)!.data;
      expect(complete).toMatchObject({
        status: 'completed',
        output: { reply: 'Echoed {"sky":"clear","echo":"[secret]","url":"/leaky"} and {"key":"[secret]","ctl":""}' },
      });
      expect(leaksOf(JSON.stringify(run.events), LEAKY_SECRET), 'live events').toEqual([]);

      const executionId = complete.execution_id as string;
      expect(leaksOf(await rawStreamText(executionId), LEAKY_SECRET), 'replayed event log').toEqual([]);
      expect(leaksOf(JSON.stringify(await statusOf(executionId)), LEAKY_SECRET), 'status and output').toEqual([]);
      const objects = await twin.s3.send(new ListObjectsV2Command({ Bucket: twin.twin.bucket, Prefix: `executions/${executionId}` }));
      for (const object of objects.Contents ?? []) {
        const body = await (
          await twin.s3.send(new GetObjectCommand({ Bucket: twin.twin.bucket, Key: object.Key! }))
        ).Body!.transformToString();
        expect(leaksOf(body, LEAKY_SECRET), object.Key).toEqual([]);
      }
    }
    for (const table of ['executions', 'userState', 'streamEvents'] as const) {
      const { Items } = await twin.dynamo.send(new ScanCommand({ TableName: twin.twin.tables[table] }));
      expect(leaksOf(JSON.stringify(Items), LEAKY_SECRET), table).toEqual([]);
    }
    // Each execution's agent ended its session with the DELETE Streamable HTTP defines before its execution completed.
    expect(sessionsMcp.sessions.opened).toHaveLength(runs);
    expect(sessionsMcp.sessions.open()).toBe(0);
  });
});

describe('image nodes', () => {
  it('stores a deterministic PNG under the execution, announces it, and serves it from a presigned URL', async () => {
    const run = await stream('draw', { user_id: 'u', input: { message: 'red fox' } });
    await run.ended;
    const complete = run.events.at(-1)!.data;
    const image = run.events.find((event) => event.event === 'image')!.data;
    expect(image).toEqual({
      node_id: 'draw',
      key: `executions/${complete.execution_id}/images/draw-1.png`,
      url: expect.stringMatching(/X-Amz-Expires=3600/),
      mime_type: 'image/png',
      width: 64,
      height: 48,
    });
    const { node_id: _node, ...output } = image;
    expect(complete).toMatchObject({ status: 'completed', output, usage: { images: 1, model_calls: 0 } });

    const served = await fetch(image.url as string);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    const bytes = Buffer.from(await served.arrayBuffer());
    const png = PNG.sync.read(bytes);
    expect([png.width, png.height]).toEqual([64, 48]);
    const expected = await scriptedImageModel.generate({ prompt: 'A red fox', width: 64, height: 48, modelId: 'scripted' });
    expect(bytes.equals(expected)).toBe(true);

    // The URL is signed: altered, it is refused.
    const tampered = (image.url as string).replace(/X-Amz-Signature=[0-9a-f]{4}/, 'X-Amz-Signature=0000');
    expect((await fetch(tampered)).status).toBe(403);
  });
});

describe('publishing agents with tools', () => {
  const refused = async (workflow: object) => (await refusedAdmin('publish', definitionsDir([workflow]), '--project', 'bad')).error;

  it('refuses secrets outside tools, tools the allow-list hides, clashing names and bad image sizes, naming the field', async () => {
    const crm = crmWorkflow('http://127.0.0.1:1/mcp');
    const agent = crm.nodes.agent;
    expect(await refused({ ...crm, nodes: { ...crm.nodes, agent: { ...agent, instructions: 'use {{secret.CRM_KEY}}' } } })).toMatch(
      /nodes\.agent: uses \{\{secret\.\*\}\}/,
    );
    expect(
      await refused({
        ...crm,
        nodes: { ...crm.nodes, agent: { ...agent, script: [{ tool_calls: [{ tool: 'delete_customer' }] }, { reply: 'x' }] } },
      }),
    ).toMatch(/nodes\.agent\.script\.0\.tool_calls\.0\.tool: "delete_customer" is not one of this agent's tools/);
    const clash = { ...crm, tools: { ...crm.tools, lookup_customer: { type: 'http', url: 'http://127.0.0.1:1/x' } } };
    expect(await refused({ ...clash, nodes: { ...crm.nodes, agent: { ...agent, tools: ['crm', 'lookup_customer'] } } })).toMatch(
      /nodes\.agent\.tools\.1: tool name "lookup_customer" is also given by "crm"/,
    );
    const transfer = { ...crm, tools: { ...crm.tools, transfer_to_x: { type: 'http', url: 'http://127.0.0.1:1/x' } } };
    expect(await refused({ ...transfer, nodes: { ...crm.nodes, agent: { ...agent, tools: ['crm', 'transfer_to_x'] } } })).toMatch(
      /starts with transfer_to_/,
    );
    expect(await refused({ ...crm, tools: { crm: { ...crm.tools.crm, headers: { k: '{{secret.bad/name}}' } } } })).toMatch(/tools\.crm: /);
    expect(
      await refused({ ...drawWorkflow, nodes: { ...drawWorkflow.nodes, draw: { ...drawWorkflow.nodes.draw, provider: 'bedrock' } } }),
    ).toMatch(/nodes\.draw\.width: must be 320-4096 and divisible by 16 for provider bedrock/);
  });

  it('refuses a bedrock image node, naming Nova Canvas or none: no Bedrock image model is supported', async () => {
    const ended =
      '"amazon.nova-canvas-v1:0" reached end of life on Bedrock on 2026-09-30; no Bedrock image model is supported now: use provider "scripted" offline or remove the image node';
    const onBedrock = (extra: object) => ({
      ...drawWorkflow,
      nodes: { ...drawWorkflow.nodes, draw: { ...drawWorkflow.nodes.draw, provider: 'bedrock', width: 320, height: 320, ...extra } },
    });
    expect(await refused(onBedrock({ model_id: 'amazon.nova-canvas-v1:0' }))).toBe(
      `Invalid workflow definition in w0.json: w0.json.nodes.draw.model_id: ${ended}`,
    );
    expect(await refused(onBedrock({}))).toBe(
      `Invalid workflow definition in w0.json: w0.json.nodes.draw.model_id: required for provider bedrock, and ${ended}`,
    );
  });
});

describe('Bedrock on the twin, behind the IAM front door', () => {
  it('runs a bedrock agent hand-off through the stand-in and a scripted image after it, counting the usage', async () => {
    twin.bedrock.reset();
    twin.bedrock.scriptConverse('amazon.nova-lite-v1:0', [
      { toolUses: [{ toolUseId: 't1', name: 'transfer_to_closer', input: {} }], usage: { inputTokens: 30, outputTokens: 5 } },
      { text: ['Closed ', 'it.'], usage: { inputTokens: 40, outputTokens: 2 } },
    ]);
    const run = await stream('bedrock-amazon-nova-lite-v1-0', { user_id: 'u', input: { message: 'close my ticket' } });
    await run.ended;
    const complete = run.events.at(-1)!.data;
    expect(complete).toMatchObject({
      status: 'completed',
      output: { reply: 'Closed it.', picture: `executions/${complete.execution_id}/images/picture-2.png` },
    });
    expect(run.events.find((event) => event.event === 'agent_handoff')!.data).toEqual({ from: 'front', to: 'closer' });
    expect(tokensOf(run.events, 'closer')).toBe('Closed it.');
    expect(complete.usage).toEqual({ model_calls: 2, input_tokens: 70, output_tokens: 7, tool_calls: 0, images: 1 });
    const image = run.events.find((event) => event.event === 'image')!.data;
    const bytes = Buffer.from(await (await fetch(image.url as string)).arrayBuffer());
    const png = PNG.sync.read(bytes);
    expect([png.width, png.height]).toEqual([320, 320]);
    expect(
      bytes.equals(await scriptedImageModel.generate({ prompt: 'A lighthouse', width: 320, height: 320, seed: 7, modelId: 'scripted' })),
    ).toBe(true);
    expect(twin.bedrock.requests.map((request) => request.operation)).toEqual(['ConverseStream', 'ConverseStream']);
  });

  it("fails an execution on a model outside the deployment's list before calling Bedrock", async () => {
    twin.bedrock.reset();
    const denialsBefore = twin.accessDenials.length;
    // A model the product supports, but not one this deployment's list (the default: US profiles) names: it has no
    // application inference profile, and the role may call no model but through one.
    const run = await stream('bedrock-eu-amazon-nova-pro-v1-0', { user_id: 'u', input: { message: 'hello' } });
    await run.ended;
    expect(run.events.at(-1)!.data).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/Bedrock model eu\.amazon\.nova-pro-v1:0 is not one this deployment allows/) as string,
    });
    expect(twin.bedrock.requests).toEqual([]);
    expect(twin.accessDenials.slice(denialsBefore)).toEqual([]);
  });
});
