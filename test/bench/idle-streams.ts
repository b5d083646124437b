import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalTwin } from '#lib/twin/twin.ts';
import type { ServedRequest } from '#lib/twin/iam/front-door.ts';
import { openSse } from '../support/sse.ts';

/**
 * What an idle stream costs, in two kinds of idleness: a `/executions/{id}/stream` resumed after an execution's pause
 * at its approval (a watcher waiting for the decision), and a `/workflows/{id}/stream` of a running execution that says
 * nothing (an agent's HTTP tool call that takes a minute): the store reads each tail makes in a measured stretch of
 * idleness (Queries of the stream events table, counted at the twin's front door from the first event on), per
 * minute. The first minute of idleness reads the most (the tail backs off as it goes on); idle-tail.ts counts a whole
 * window.
 */
export interface IdleStreamContext {
  twin: LocalTwin;
  admin: (...argv: string[]) => Promise<Record<string, string>>;
  /** The store requests `principal` made while `work` ran. */
  recorded: (principal: string, work: () => Promise<unknown>) => Promise<ServedRequest[]>;
}

/** Store reads per minute of idleness, in its first minute: waiting at an approval, and running but silent. */
export interface IdleStreamReads {
  approval: number;
  silent_run: number;
}

const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
/** A tool call takes at most a minute (MAX_TOOL_TIMEOUT_MS): the silent run is measured for most of one. */
const SILENT_RUN_SECONDS = Math.min(IDLE_SECONDS, 45);
const PROJECT = 'bench-idle';

export async function idleStreamBench(context: IdleStreamContext): Promise<IdleStreamReads> {
  // The tool answers once the measurement is over (and within the tool's own minute).
  const held = new Set<() => void>();
  const releaseAll = () => [...held].forEach((release) => release());
  const server = createServer((_request, response) => {
    const answer = () => {
      clearTimeout(timer);
      held.delete(answer);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    };
    const timer = setTimeout(answer, (SILENT_RUN_SECONDS + 5) * 1000);
    held.add(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await publishIdleWorkflows(context, `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow`);
    const { key } = await context.admin('keys', 'create', '--name', 'bench-idle', '--preset', 'full', '--project', PROJECT);
    const base = `${context.twin.url}/api/v1/published`;
    const headers = { authorization: `Bearer ${key}` };
    const table = `table/${context.twin.twin.tables.streamEvents}`;
    const readsPerMinute = async (principal: string, seconds: number) => {
      const served = await context.recorded(principal, () => new Promise((resolve) => setTimeout(resolve, seconds * 1000)));
      const reads = served.filter((request) => request.operation === 'Query' && request.resource.endsWith(table)).length;
      return Math.round((reads / seconds) * 600) / 10;
    };

    // A watcher of an execution waiting at its approval: its stream resumed after the pause's `complete`.
    const waiting = await startExecution(base, headers, 'gate');
    const watcher = await openSse(`${base}/executions/${waiting.executionId}/stream?after=${waiting.lastEventId}`, { headers });
    const approval = await readsPerMinute('PublishedStreamExecution', IDLE_SECONDS);
    watcher.close();
    await fetch(`${base}/executions/${waiting.executionId}/reject`, { method: 'POST', headers, body: '{}' });

    const stream = await openSse(`${base}/workflows/slow/stream`, {
      method: 'POST',
      headers,
      body: { user_id: 'bench', input: { message: 'idle' } },
    });
    await stream.waitFor((event) => event.event === 'tool_call', 30_000);
    const silentRun = await readsPerMinute('PublishedStreamWorkflow', SILENT_RUN_SECONDS);
    releaseAll();
    await stream.ended;

    return { approval, silent_run: silentRun };
  } finally {
    releaseAll();
    server.close();
  }
}

/** Executes a workflow to its pause at the approval: its id, and the id of the pause's `complete`. */
async function startExecution(base: string, headers: Record<string, string>, workflowId: string) {
  const stream = await openSse(`${base}/workflows/${workflowId}/stream`, {
    method: 'POST',
    headers,
    body: { user_id: 'bench', input: { message: 'idle' } },
  });
  await stream.ended;
  const complete = stream.events.at(-1)!;
  if (complete.data.status !== 'interrupted') throw new Error(`idle-streams: ${workflowId} did not stop at its approval`);
  return { executionId: complete.data.execution_id as string, lastEventId: complete.id! };
}

/** `gate` waits at its approval; `slow` is an agent whose one tool call takes most of a minute. */
async function publishIdleWorkflows(context: IdleStreamContext, toolUrl: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-idle-'));
  const gate = {
    id: 'gate',
    name: 'Gate',
    start: 'ask',
    nodes: { ask: { type: 'approval', message: 'Proceed?', next: 'done' }, done: { type: 'end', output: 'ok' } },
  };
  const slow = {
    id: 'slow',
    name: 'Slow tool',
    start: 'a',
    tools: { wait: { type: 'http', url: toolUrl, timeout_ms: 60_000, parameters: { type: 'object', properties: {} } } },
    nodes: {
      a: {
        type: 'agent',
        provider: 'scripted',
        tools: ['wait'],
        script: [{ tool_calls: [{ tool: 'wait', arguments: {} }] }, { reply: 'done' }],
        next: 'done',
      },
      done: { type: 'end', output: '{{nodes.a.output}}' },
    },
  };
  writeFileSync(join(dir, 'gate.json'), JSON.stringify(gate));
  writeFileSync(join(dir, 'slow.json'), JSON.stringify(slow));
  await context.admin('publish', dir, '--project', PROJECT);
}
