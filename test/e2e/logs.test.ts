import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '#lib/admin/cli.ts';
import { callEvent } from '../support/events.ts';
import { http, postJson } from '../support/http.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { createKey, publishedClient, publishFixtures } from '../support/published.ts';

/**
 * What reaches the functions' logs, at the most talkative level: every line carries its correlation ids (the
 * request id; the link, the key or the execution it is about) and never a token, an API key, a callback's signing
 * secret or a tool secret.
 */
const lines: { fn: string; line: string }[] = [];
const TOOL_SECRET = 'tool-secret-3b9f1e22c0';
const CALLBACK_SECRET = 'whsec_c2lnbmluZy1zZWNyZXQtZm9yLWxvZ3MtdGVzdA==';
let twin: TestTwin;
let receiver: Server;
let receiverUrl: string;

beforeAll(async () => {
  process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
  process.env.ALLOW_LOOPBACK_TOOLS = '1';
  process.env.ALLOW_LOOPBACK_CALLBACKS = '1';
  receiver = createServer((request, response) => {
    request.resume();
    // An echoing tool, and a callback receiver that refuses once so the delivery is retried and logged.
    response
      .writeHead(request.url === '/tool' ? 200 : 500, { 'content-type': 'application/json' })
      .end(JSON.stringify({ echo: request.headers['x-key'] }));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  twin = await startTestTwin({ onFunctionLog: (fn, line) => lines.push({ fn, line }) });
}, 60_000);
afterAll(async () => {
  delete process.env.POWERTOOLS_LOG_LEVEL;
  await twin?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

const jsonLines = () =>
  lines.flatMap(({ fn, line }) => {
    try {
      return [{ fn, entry: JSON.parse(line) as Record<string, unknown>, line }];
    } catch {
      return [];
    }
  });

describe('function logs', () => {
  it('carry correlation ids and no token, key or secret value', async () => {
    const link = await boundLink(twin, 'calls');
    expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`, callEvent())).status).toBe(201);
    expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`, { type: 'call' })).status).toBe(400);
    const unknownToken = `${link.token.slice(0, -4)}AAAA`;
    expect((await http(`${twin.webhookUrl}/api/v1/webhooks/${unknownToken}/ping`)).status).toBe(404);

    await publishFixtures(twin, 'logs');
    const dir = mkdtempSync(join(tmpdir(), 'logs-'));
    writeFileSync(
      join(dir, 'tool.json'),
      JSON.stringify({
        id: 'tooled',
        name: 'Tooled',
        start: 'a',
        tools: { t: { type: 'http', url: `${receiverUrl}/tool`, headers: { 'x-key': '{{secret.K}}' } } },
        nodes: {
          a: {
            type: 'agent',
            provider: 'scripted',
            tools: ['t'],
            script: [{ tool_calls: [{ tool: 't' }] }, { reply: 'done' }],
            next: 'end',
          },
          end: { type: 'end', output: '{{nodes.a.output}}' },
        },
      }),
    );
    expect((await runCli(['publish', dir, '--project', 'logs2', '--json'])).exitCode).toBe(0);
    expect(
      (await runCli(['secrets', 'set', 'K', '--project', 'logs2', '--json'], { stdin: () => Promise.resolve(TOOL_SECRET) })).exitCode,
    ).toBe(0);
    const key = (await createKey(twin, 'full', { project: 'logs' })).key;
    const toolKey = (await createKey(twin, 'full', { project: 'logs2' })).key;
    const client = publishedClient(twin, key);
    expect((await client.getWorkflow('no-such-workflow')).status).toBe(404);
    expect((await publishedClient(twin, `${key.slice(0, -3)}xyz`).listWorkflows()).status).toBe(401);
    const run = await client.execute('echo', {
      user_id: 'u',
      input: { message: 'hi' },
      callback_url: `${receiverUrl}/callback`,
      webhook_secret: CALLBACK_SECRET,
    });
    expect(run.status).toBe(200);
    expect((await publishedClient(twin, toolKey).execute('tooled', { user_id: 'u' })).body.output).toBe('done');
    // The callback is delivered (and refused) in the background: wait for its first attempt's lines.
    await new Promise((resolve) => setTimeout(resolve, 1500));

    const all = lines.map(({ line }) => line).join('\n');
    for (const [name, value] of Object.entries({ token: link.token, unknownToken, key, toolKey, TOOL_SECRET, CALLBACK_SECRET })) {
      expect(all.includes(value), `${name} reached a log line`).toBe(false);
    }

    const entries = jsonLines().filter(({ entry }) => typeof entry.level === 'string');
    expect(entries.length).toBeGreaterThan(3);
    for (const { fn, entry } of entries) expect(entry.function_request_id, `${fn}: ${JSON.stringify(entry)}`).toEqual(expect.any(String));
    const refusedEvent = entries.find(({ fn, entry }) => fn === 'WebhookPostEvent' && entry.message === 'request refused');
    expect(refusedEvent?.entry).toMatchObject({ link_id: link.linkId, statusCode: 400 });
    const refusedWorkflow = entries.find(({ fn, entry }) => fn === 'PublishedGetWorkflow' && entry.message === 'request refused');
    expect(refusedWorkflow?.entry).toMatchObject({ project_id: 'logs', key_id: expect.stringMatching(/^key_/), statusCode: 404 });
    const stepLines = entries.filter(({ fn }) => fn === 'WorkflowStep' || fn === 'WorkflowDeliverCallback');
    for (const { entry } of stepLines) expect(entry.execution_id, JSON.stringify(entry)).toEqual(expect.any(String));
  }, 60_000);
});
