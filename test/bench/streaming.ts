import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CostUnits } from '#shared/metering/cost-meter.ts';
import type { LocalTwin } from '#lib/twin/twin.ts';
import { openSse } from '../support/sse.ts';
import { percentile } from './stats.ts';
import { streamBytesBench, type StreamBytes } from './stream-bytes.ts';
import { idleStreamBench, type IdleStreamReads } from './idle-streams.ts';
import { idleTailReads, type IdleTailReads } from './idle-tail.ts';
import type { ServedRequest } from '#lib/twin/iam/front-door.ts';
import { streamWindowMsFromEnv } from '#shared/http/stream-settings.ts';

/**
 * Streaming figures on the local twin, for one scripted llm node streamed (POST /stream) and executed (POST
 * /execute) the same way, one execution at a time:
 * - first-token overhead: when the first token arrives by stream, beside a whole one-token run by execute
 *   (both pay the execution's start; the difference is what streaming adds before the first token);
 * - added latency per token: (stream's complete − execute's answer) / tokens, for the same N-token run;
 * - the log's DynamoDB writes per second of generation, and the units of a 1,000-token streamed run.
 */
export interface StreamingBenchContext {
  twin: LocalTwin;
  dynamo: DynamoDBDocumentClient;
  admin: (...argv: string[]) => Promise<Record<string, string>>;
  costs: Map<string, { requests: number; units: CostUnits }>;
  /** The store requests `principal` made while `work` ran. */
  recorded: (principal: string, work: () => Promise<unknown>) => Promise<ServedRequest[]>;
}

const RUNS = Number(process.env.BENCH_STREAMS ?? 20);
const LONG_TOKENS = 1000;
const TOKEN_DELAY_MS = 5;

export async function streamingBench(
  context: StreamingBenchContext,
): Promise<StreamBytes & { idleStream: IdleStreamReads; idleWindow: IdleTailReads }> {
  const { twin } = context;
  await publishStreamingWorkflow(context);
  const { key } = await context.admin('keys', 'create', '--name', 'bench-stream', '--preset', 'full', '--project', 'bench-stream');
  const base = `${twin.url}/api/v1/published/workflows`;
  const headers = { authorization: `Bearer ${key}` };
  const body = (tokens: number, delayMs: number) => ({
    user_id: 'bench',
    input: { message: 'go' },
    overrides: { write: { reply: words(tokens), token_delay_ms: delayMs } },
  });

  const executeMs = async (tokens: number, delayMs: number) => {
    const started = performance.now();
    const answer = await fetch(`${base}/writer/execute`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body(tokens, delayMs)),
    });
    const result = JSON.parse((await answer.text()).trim()) as { status: string };
    if (result.status !== 'completed') throw new Error(`execute: ${result.status}`);
    return performance.now() - started;
  };
  const stream = async (tokens: number, delayMs: number) => {
    const opened = await openSse(`${base}/writer/stream`, { method: 'POST', headers, body: body(tokens, delayMs) });
    await opened.ended;
    const events = opened.events;
    const firstToken = opened.arrivals.filter((arrival) => arrival.kind === 'event')[events.findIndex((event) => event.event === 'token')]!
      .atMs;
    const complete = opened.arrivals.filter((arrival) => arrival.kind === 'event').at(-1)!.atMs;
    if (events.at(-1)?.data.status !== 'completed') throw new Error('stream did not complete');
    return { firstToken, complete, executionId: events[0]!.data.execution_id as string };
  };

  // Warm both paths' functions (cold starts are not what this measures).
  await executeMs(1, 0);
  await stream(1, 0);

  const oneTokenExecute: number[] = [];
  const firstTokens: number[] = [];
  const perTokenAdded: number[] = [];
  const tokens = 50;
  for (let i = 0; i < RUNS; i++) {
    oneTokenExecute.push(await executeMs(1, 0));
    const streamed = await stream(tokens, 10);
    firstTokens.push(streamed.firstToken);
    perTokenAdded.push((streamed.complete - (await executeMs(tokens, 10))) / tokens);
  }
  const median = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      0.5,
    );
  console.log(
    `  one-token run by execute p50 ${median(oneTokenExecute).toFixed(1)} ms; first token by stream p50 ${median(firstTokens).toFixed(1)} ms`,
  );
  console.log(`first-token overhead of streaming (p50): ${(median(firstTokens) - median(oneTokenExecute)).toFixed(1)} ms`);
  console.log(`added latency per token, ${tokens} tokens at 10 ms, stream vs execute (p50): ${median(perTokenAdded).toFixed(2)} ms`);

  context.costs.clear();
  const long = await stream(LONG_TOKENS, TOKEN_DELAY_MS);
  const generationSeconds = (LONG_TOKENS * TOKEN_DELAY_MS) / 1000;
  const batches = await batchCount(context, long.executionId);
  const units = (operation: string) => context.costs.get(operation)?.units;
  const step = units('WorkflowStep');
  const handler = units('PublishedStreamWorkflow');
  console.log(
    `streamed run of ${LONG_TOKENS} tokens (${generationSeconds} s of generation): ${batches} log batches = ${(batches / generationSeconds).toFixed(1)} event writes/s; ` +
      `step function WCU ${step?.dynamoWriteUnits.toFixed(0)} RCU ${step?.dynamoReadUnits.toFixed(0)}; ` +
      `stream handler RCU ${handler?.dynamoReadUnits.toFixed(0)} WCU ${handler?.dynamoWriteUnits.toFixed(0)} (auth, start, run record and the tail's reads)`,
  );

  const bytes = await streamBytesBench({ twin, key: key! });
  const { run, idle } = bytes;
  console.log(
    `bytes on the wire, a streamed run of ${run.events} events over ${run.seconds.toFixed(1)} s: ${run.wire_bytes} B for ${run.event_bytes} B of events and a ${run.head_bytes} B head (${run.ratio.toFixed(2)}x)`,
  );
  console.log(
    `bytes on the wire, a silent /events subscription: ${idle.wire_bytes} B in ${idle.seconds} s (${idle.bytes_per_minute.toFixed(0)} B a minute)`,
  );
  const idleStream = await idleStreamBench({ twin, admin: context.admin, recorded: context.recorded });
  console.log(
    `store reads in the first idle minute of a stream: ${idleStream.approval} on an execution waiting at its approval ` +
      `(a watcher resumed after the pause), ${idleStream.silent_run} on a running execution that says nothing (a tool call)`,
  );
  // The deployment's window, as the twin's functions take it (STREAM_WINDOW_SECONDS, else the default).
  const idleWindow = await idleTailReads(streamWindowMsFromEnv());
  const { abandoned } = idleWindow;
  console.log(
    `over a whole ${idleWindow.window_seconds} s window (the product's tail on a simulated clock): ${idleWindow.approval.reads} reads ` +
      `waiting at an approval (${idleWindow.approval.per_minute} a minute), ${idleWindow.silent_run.reads} on a silent run ` +
      `(${idleWindow.silent_run.per_minute} a minute)`,
  );
  console.log(
    `one abandoned stream on AWS, served to the end of its window: ${abandoned.lambda_gb_s} GB-s of Lambda, ` +
      `${abandoned.read_units} read units, $${abandoned.usd.toFixed(7)}`,
  );
  return { ...bytes, idleStream, idleWindow };
}

function words(count: number): string {
  return Array.from({ length: count }, (_, index) => `w${index}`).join(' ');
}

async function publishStreamingWorkflow(context: StreamingBenchContext) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-stream-'));
  const writer = {
    id: 'writer',
    name: 'Writer',
    start: 'write',
    nodes: {
      write: { type: 'llm', provider: 'scripted', reply: 'x', next: 'done' },
      done: { type: 'end', output: '{{nodes.write.output}}' },
    },
  };
  writeFileSync(join(dir, 'writer.json'), JSON.stringify(writer));
  // An execution that waits at its approval: what a silent /events subscription watches.
  const gate = {
    id: 'gate',
    name: 'Gate',
    start: 'ask',
    nodes: { ask: { type: 'approval', message: 'Proceed?', next: 'done' }, done: { type: 'end', output: 'ok' } },
  };
  writeFileSync(join(dir, 'gate.json'), JSON.stringify(gate));
  await context.admin('publish', dir, '--project', 'bench-stream');
}

async function batchCount(context: StreamingBenchContext, executionId: string): Promise<number> {
  const result = await context.dynamo.send(
    new QueryCommand({
      TableName: context.twin.twin.tables.streamEvents,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `run#${executionId}` },
      Select: 'COUNT',
    }),
  );
  return result.Count ?? 0;
}
