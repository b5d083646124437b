import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalTwin } from '#lib/twin/twin.ts';
import { percentile } from './stats.ts';

/**
 * The engine's overhead per tool call: the same scripted agent executed with three HTTP tool calls to a local server
 * that answers after TOOL_LATENCY_MS, and with none; (with − without) / 3 − the tool's own latency.
 */
const RUNS = Number(process.env.BENCH_AGENT_RUNS ?? 20);
const TOOL_LATENCY_MS = 20;

export async function agentsBench(context: {
  twin: LocalTwin;
  admin: (...argv: string[]) => Promise<Record<string, string>>;
}): Promise<void> {
  const server = createServer((_request, response) =>
    setTimeout(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), TOOL_LATENCY_MS),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tool?n={{args.n}}`;
    const call = (n: number) => ({ tool_calls: [{ tool: 'ping', arguments: { n } }] });
    const agent = (script: object[]) => ({ type: 'agent', provider: 'scripted', tools: ['ping'], script, next: 'done' });
    const workflow = (id: string, script: object[]) => ({
      id,
      name: id,
      start: 'a',
      tools: { ping: { type: 'http', url, parameters: { type: 'object', properties: { n: { type: 'number' } } } } },
      nodes: { a: agent(script), done: { type: 'end', output: '{{nodes.a.output}}' } },
    });
    const dir = mkdtempSync(join(tmpdir(), 'bench-agents-'));
    writeFileSync(join(dir, 'tools.json'), JSON.stringify(workflow('tools', [call(1), call(2), call(3), { reply: 'done' }])));
    writeFileSync(join(dir, 'plain.json'), JSON.stringify(workflow('plain', [{ reply: 'done' }])));
    await context.admin('publish', dir, '--project', 'bench-agents');
    const { key } = await context.admin('keys', 'create', '--name', 'bench-agents', '--preset', 'full', '--project', 'bench-agents');

    const execute = async (workflowId: string) => {
      const started = performance.now();
      const answer = await fetch(`${context.twin.url}/api/v1/published/workflows/${workflowId}/execute`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'bench' }),
      });
      const result = JSON.parse((await answer.text()).trim()) as { status: string };
      if (result.status !== 'completed') throw new Error(`agent run ${workflowId}: ${result.status}`);
      return performance.now() - started;
    };
    await execute('tools');
    await execute('plain');
    const withTools: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      withTools.push(await execute('tools'));
      without.push(await execute('plain'));
    }
    const median = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        0.5,
      );
    const perCall = (median(withTools) - median(without)) / 3 - TOOL_LATENCY_MS;
    console.log(
      `agent run, 3 HTTP tool calls (tool answers in ${TOOL_LATENCY_MS} ms) p50 ${median(withTools).toFixed(1)} ms; same agent without tools p50 ${median(without).toFixed(1)} ms`,
    );
    console.log(`engine overhead per tool call over the tool's own latency (p50): ${perCall.toFixed(1)} ms`);
  } finally {
    server.close();
  }
}
