import { gzipSync } from 'node:zlib';
import {
  BatchWriteCommand,
  type BatchWriteCommandInput,
  type BatchWriteCommandOutput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { receivedKey, type StoredEvent } from '#inbound/stored-event.ts';
import { taskFunctions } from '#functions/task-functions.ts';
import { COLLECTION_CONCURRENCY, QUEUE_RETENTION_MS, RECORDING_UPLOAD_PART_BYTES, RECORDING_UPLOAD_QUEUE_SIZE } from '#shared/limits.ts';
import { ttlSeconds } from '#shared/time.ts';
import type { LocalTwin } from '#lib/twin/twin.ts';
import { callEvent, textEvent } from '../support/events.ts';
import { startRecordingServer, type RecordingServer } from '../support/https-recording-server.ts';
import { collectBatchInOwnProcess, runtimeBaselineMb, twinCollectBatchPeakMb, worstCaseUploadBuffersMb } from './collection-memory.ts';

/**
 * Collection throughput on the local twin: a sweep over 10,000 queued dialogs, and over calls whose recordings come
 * from a local HTTPS server, with the process's peak RSS sampled during each sweep (the twin, its functions and the
 * stores share this process). The queue is written straight into the table (what ingest would have stored), so the
 * figures are the collection's alone. First, CollectBatch's own memory with a page of large recordings
 * (`BENCH_COLLECTION=memory` runs only that part).
 */
export interface CollectionBenchContext {
  twin: LocalTwin;
  dynamo: DynamoDBDocumentClient;
  admin: (...argv: string[]) => Promise<Record<string, string>>;
}

const DIALOGS = Number(process.env.BENCH_QUEUED_DIALOGS ?? 10_000);
const CALLS = Number(process.env.BENCH_RECORDED_CALLS ?? 1_000);
/** The recordings of the memory measurement: as many as one batch fetches at once, each this many MiB. */
const LARGE_RECORDING_MIB = Number(process.env.BENCH_RECORDING_MIB ?? 50);

export async function collectionBench(context: CollectionBenchContext): Promise<void> {
  const recordings = await startRecordingServer();
  try {
    await memoryBench(context, recordings);
    if (process.env.BENCH_COLLECTION === 'memory') return;
    const dialogs = await queuedLink(context, 'dialogs', DIALOGS, () => textEvent(20));
    report('queued dialogs', DIALOGS, await timedSweep(context, dialogs));
    for (const [count, bytes] of [
      [Math.min(200, CALLS), 256 * 1024],
      [CALLS, 1024 * 1024],
    ] as const) {
      recordings.file(`/bench/${bytes}.mp3`, bytes);
      const calls = await queuedLink(context, 'calls', count, () =>
        callEvent({ audio: { url: recordings.href(`/bench/${bytes}.mp3`), format: 'mp3' } }),
      );
      report(`calls with ${bytes / 1024} KB recordings`, count, await timedSweep(context, calls));
    }
  } finally {
    await recordings.close();
  }
}

/**
 * One batch of COLLECTION_CONCURRENCY recordings of LARGE_RECORDING_MIB each, on the twin at CollectBatch's memory
 * size (a batch past it fails with Runtime.OutOfMemory), then the same in a process of its own (collection-memory.ts).
 */
async function memoryBench(context: CollectionBenchContext, recordings: RecordingServer): Promise<void> {
  const memorySizeMb = taskFunctions.find((task) => task.id === 'CollectBatch')?.memorySize ?? 256;
  const bytes = LARGE_RECORDING_MIB * 2 ** 20;
  recordings.file(`/bench/large.mp3`, bytes);
  const event = () => callEvent({ audio: { url: recordings.href('/bench/large.mp3'), format: 'mp3' } });
  const label = `${COLLECTION_CONCURRENCY} calls with ${LARGE_RECORDING_MIB} MiB recordings`;
  console.log(
    `CollectBatch memory: ${memorySizeMb} MB, ${COLLECTION_CONCURRENCY} recordings at once, uploads of ${RECORDING_UPLOAD_PART_BYTES / 2 ** 20} MiB parts, ` +
      `${RECORDING_UPLOAD_QUEUE_SIZE} at a time (worst case ${worstCaseUploadBuffersMb().toFixed(0)} MiB of part buffers); Node runtime's own share ${(await runtimeBaselineMb()).toFixed(0)} MiB`,
  );
  const onTwin = await queuedLink(context, 'calls', COLLECTION_CONCURRENCY, event);
  try {
    const sweep = await timedSweep(context, onTwin);
    report(`${label}, twin`, COLLECTION_CONCURRENCY, sweep);
  } catch (error) {
    console.log(`${label}, twin: the sweep failed: ${(error as Error).message.slice(0, 300)}`);
  }
  const twinPeakMb = await twinCollectBatchPeakMb(context.twin);
  console.log(
    `  CollectBatch on the twin, counted against its memory size: peak ${twinPeakMb.toFixed(0)} MiB of ${memorySizeMb} MB (${((100 * twinPeakMb) / memorySizeMb).toFixed(0)}%)`,
  );
  const ownProcess = await queuedLink(context, 'calls', COLLECTION_CONCURRENCY, event);
  const started = performance.now();
  const alone = await collectBatchInOwnProcess(context.twin, ownProcess, 'bench-own-process');
  console.log(
    `  CollectBatch bundle in a process of its own, S3 over TLS (${((performance.now() - started) / 1000).toFixed(1)} s, ${JSON.stringify(alone.result)}): ` +
      `VmHWM ${alone.vmHwmMb.toFixed(0)} MiB (${((100 * alone.vmHwmMb) / memorySizeMb).toFixed(0)}% of ${memorySizeMb} MB); its heap and external memory at most ${alone.accountedMb.toFixed(0)} MiB (heap ${alone.heapAtPeakMb.toFixed(0)})`,
  );
}

function report(
  label: string,
  count: number,
  sweep: { seconds: number; peakRssMb: number; baseRssMb: number; summary: Record<string, unknown> },
) {
  console.log(
    `${label.padEnd(32)} ${count} events in ${sweep.seconds.toFixed(1)} s = ${(count / sweep.seconds).toFixed(0)} handed off/s; ` +
      `RSS ${sweep.baseRssMb.toFixed(0)} MB before, peak ${sweep.peakRssMb.toFixed(0)} MB (handed_off ${String(sweep.summary.handed_off)}, failed ${String(sweep.summary.failed)})`,
  );
}

async function timedSweep(context: CollectionBenchContext, taskId: string) {
  const baseRssMb = process.memoryUsage().rss / 2 ** 20;
  let peakRssMb = baseRssMb;
  const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, process.memoryUsage().rss / 2 ** 20)), 50);
  const started = performance.now();
  try {
    const summary = await context.admin('collect', '--task', taskId);
    return { seconds: (performance.now() - started) / 1000, peakRssMb, baseRssMb, summary };
  } finally {
    clearInterval(sampler);
  }
}

/** A bound link with `count` queued events (written as ingest stores them) and a periodic task for it. */
async function queuedLink(
  context: CollectionBenchContext,
  type: 'calls' | 'dialogs',
  count: number,
  makeEvent: () => object,
): Promise<string> {
  const issued = await context.admin('links', 'issue', '--type', type);
  const bound = await context.admin('links', 'bind', issued.link_id!);
  const sourceId = bound.source_id!;
  const receivedMs = Date.now() - 60_000;
  const items: StoredEvent[] = [];
  for (let i = 1; i <= count; i++) {
    const event = makeEvent() as { type: 'call' | 'text'; external_id: string };
    const receivedAt = new Date(receivedMs + i).toISOString();
    items.push({
      source_id: sourceId,
      external_id: event.external_id,
      event_id: i,
      type: event.type,
      state: 'queued',
      received_at: receivedAt,
      received_key: receivedKey(receivedAt, i),
      occurred_at: receivedAt,
      message_count: 0,
      metadata_fields: [],
      body_gzip: gzipSync(JSON.stringify(event)),
      body_bytes: 0,
      delivery_failures: 0,
      expires_at: ttlSeconds(receivedMs + QUEUE_RETENTION_MS),
    });
  }
  for (let start = 0; start < items.length; start += 25) {
    const table = context.twin.twin.tables.inboundEvents;
    let requests: NonNullable<BatchWriteCommandInput['RequestItems']>[string] | undefined = items
      .slice(start, start + 25)
      .map((item) => ({ PutRequest: { Item: item } }));
    while (requests && requests.length > 0) {
      const result: BatchWriteCommandOutput = await context.dynamo.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
      requests = result.UnprocessedItems?.[table];
    }
  }
  return (await context.admin('tasks', 'create', '--link', issued.link_id!)).task_id!;
}
