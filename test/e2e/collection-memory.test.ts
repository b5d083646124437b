import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskFunctions } from '#functions/task-functions.ts';
import { COLLECTION_CONCURRENCY } from '#shared/limits.ts';
import { boundLink, startTestTwin, type TestTwin } from '../support/local-twin.ts';
import { callEvent } from '../support/events.ts';
import { postJson } from '../support/http.ts';
import { fileBytes, startRecordingServer, type RecordingServer } from '../support/https-recording-server.ts';

/**
 * CollectBatch at the memory size CDK deploys it with, on the twin, whose host counts Buffers (each upload's part
 * buffers) against it as Lambda counts resident memory: a batch of the largest recordings the sizing was measured
 * with, all fetched at once, is collected without Runtime.OutOfMemory (256 MB and lib-storage's default queue of
 * 4 parts died here).
 */
const RECORDING_BYTES = 50 * 2 ** 20;
const recording = fileBytes(0, RECORDING_BYTES);
const recordingSha256 = createHash('sha256').update(recording).digest('hex');

let twin: TestTwin;
let recordings: RecordingServer;
beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_RECORDINGS = '1';
  // A batch killed for its memory would be retried after 10, 20 and 40 s: the sweep fails at once instead.
  twin = await startTestTwin({ retryIntervalMs: 1 });
  recordings = await startRecordingServer();
  // The same bytes each time, sliced from one buffer: this process also hosts the twin, so it spends no CPU making them.
  recordings.route('/large.mp3', (_request, response) => {
    response.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': RECORDING_BYTES });
    Readable.from(slices(recording, 64 * 1024)).pipe(response);
  });
});
afterAll(async () => {
  await recordings?.close();
  await twin?.close();
});

function* slices(bytes: Buffer, size: number) {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
}

describe('CollectBatch memory on the twin', () => {
  it(`collects ${COLLECTION_CONCURRENCY} recordings of 50 MiB at once within its memory size`, async () => {
    const memorySizeMb = taskFunctions.find((task) => task.id === 'CollectBatch')!.memorySize ?? 256;
    const link = await boundLink(twin, 'calls');
    for (let i = 0; i < COLLECTION_CONCURRENCY; i++) {
      const event = callEvent({ audio: { url: recordings.href('/large.mp3'), format: 'mp3' } });
      expect((await postJson(`${twin.webhookUrl}/api/v1/webhooks/${link.token}/events`, event)).status).toBe(201);
    }
    const task = await twin.admin('tasks', 'create', '--link', link.linkId);

    const sweep = await twin.admin('collect', '--task', task.task_id);

    expect(sweep).toMatchObject({ handed_off: COLLECTION_CONCURRENCY, failed: 0, pending: 0 });
    const { conversations } = await twin.admin('handoffs', '--link', link.linkId);
    expect(conversations.map((conversation: { recording: unknown }) => conversation.recording)).toEqual(
      Array.from({ length: COLLECTION_CONCURRENCY }, () => expect.objectContaining({ bytes: RECORDING_BYTES, sha256: recordingSha256 })),
    );
    // `collect` answers when the checkpoint says finished, which the last batch writes before it returns: its
    // memory figure comes with its end.
    await twin.settled(['CollectBatch']);
    const peakMb = twin.maxMemoryUsedMb('CollectBatch');
    // It was counted: eight transfers' part buffers on top of the runtime, and still under the size.
    expect(peakMb).toBeGreaterThan(100);
    expect(peakMb).toBeLessThan(memorySizeMb);
  }, 120_000);
});
