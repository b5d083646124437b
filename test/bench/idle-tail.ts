import { executionStream } from '#executions/execution-streams.ts';
import { loadPriceSheet } from '#lib/pricing/price-sheet.ts';
import type { StreamEvent } from '#executions/stream-events.ts';
import { InMemoryStreamEventsRepository } from '../support/fakes/stream-events-repository.ts';
import { ManualClock } from '../support/fakes/clock.ts';

/**
 * The store reads of an idle stream over a whole window, counted by running the product's own tail
 * (functions/executions/execution-streams.ts) on a simulated clock: what an abandoned stream reads on AWS, where
 * nobody stops it, without waiting the window out. Two kinds of idleness, each a stream resumed after the last event
 * it has: of an execution waiting at its approval, and of a running execution whose last event is a tool call in progress.
 * From the costlier of the two, what one abandoned stream costs: the window's Lambda time at the streaming functions'
 * memory size and its reads, each one read unit (a strongly consistent Query of under 4 KB: an idle one finds nothing),
 * priced at the sheet's prices.
 */
export interface IdleTailReads {
  window_seconds: number;
  /** Reads over the whole window, and per minute on average. */
  approval: { reads: number; per_minute: number };
  silent_run: { reads: number; per_minute: number };
  abandoned: { lambda_gb_s: number; read_units: number; usd: number };
}

/** What CDK gives a function whose route names no memory size (lib/cdk/constructs/handler-function.ts): the streams' functions. */
const STREAM_FUNCTION_GB = 256 / 1024;

const EXECUTION = 'idle-execution';

function waitingLog(): StreamEvent[] {
  return [
    { type: 'start', data: { execution_id: EXECUTION, thread_id: 't', workflow_id: 'gate' } },
    { type: 'node_update', data: { node_id: 'ask', type: 'approval', status: 'started' } },
    { type: 'node_update', data: { node_id: 'ask', type: 'approval', status: 'waiting', approval_id: 'a1' } },
    {
      type: 'complete',
      data: {
        output: null,
        execution_id: EXECUTION,
        status: 'interrupted',
        usage: { model_calls: 0, input_tokens: 0, output_tokens: 0, tool_calls: 0, images: 0 },
        pending_approval: { approval_id: 'a1', node_id: 'ask', message: 'Proceed?' },
      },
    },
  ] as StreamEvent[];
}

function silentRunLog(): StreamEvent[] {
  return [
    { type: 'start', data: { execution_id: EXECUTION, thread_id: 't', workflow_id: 'slow' } },
    { type: 'node_update', data: { node_id: 'a', type: 'agent', status: 'started' } },
    { type: 'tool_call', data: { node_id: 'a', tool: 'wait', call_id: 'c1', status: 'started', arguments: {} } },
  ] as StreamEvent[];
}

async function readsOverWindow(
  log: StreamEvent[],
  view: typeof executionStream,
  after: (lastId: number) => number,
  windowMs: number,
): Promise<number> {
  const events = new InMemoryStreamEventsRepository();
  await events.putBatch(EXECUTION, 1, log, { final: false, projectId: 'p', expiresAtMs: 0 });
  const clock = new ManualClock();
  let reads = 0;
  const counted = Object.assign(Object.create(events) as InMemoryStreamEventsRepository, {
    batchesAfter: (executionId: string, afterFirstId: number) => {
      reads += 1;
      return events.batchesAfter(executionId, afterFirstId);
    },
  });
  const stream = view({ events: counted, now: clock.now, sleep: (ms) => clock.sleep(ms) }, EXECUTION, {
    after: after(log.length),
    signal: new AbortController().signal,
    deadlineMs: clock.now() + windowMs,
  });
  for (let next = await stream.next(); !next.done; next = await stream.next());
  return reads;
}

export async function idleTailReads(windowMs: number): Promise<IdleTailReads> {
  const minutes = windowMs / 60_000;
  const summary = (reads: number) => ({ reads, per_minute: Math.round((reads / minutes) * 10) / 10 });
  // A watcher resumes after the last event it has (the pause's `complete`), as a stream does window after window.
  const approval = await readsOverWindow(waitingLog(), executionStream, (lastId) => lastId, windowMs);
  const silentRun = await readsOverWindow(silentRunLog(), executionStream, (lastId) => lastId, windowMs);
  const sheet = loadPriceSheet();
  const lambdaGbS = (windowMs / 1000) * STREAM_FUNCTION_GB;
  const readUnits = Math.max(approval, silentRun);
  const usd = lambdaGbS * 1000 * sheet.units.lambdaGbMs.usd_per_unit + readUnits * sheet.units.dynamoReadUnits.usd_per_unit;
  return {
    window_seconds: windowMs / 1000,
    approval: summary(approval),
    silent_run: summary(silentRun),
    abandoned: { lambda_gb_s: lambdaGbS, read_units: readUnits, usd: Math.round(usd * 1e7) / 1e7 },
  };
}
