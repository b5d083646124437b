import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { taskFunctions } from '#functions/task-functions.ts';
import { COLLECTION_CONCURRENCY, RECORDING_UPLOAD_PART_BYTES, RECORDING_UPLOAD_QUEUE_SIZE } from '#shared/limits.ts';
import { bundleFunction } from '#lib/cdk/bundling/bundle.ts';
import { functionEnvironment } from '#lib/twin/lambda/function-environment.ts';
import { runtimeBaselineBytes } from '#lib/twin/lambda/function-memory.ts';
import { HANDOFF_EVENTS_FILE_NAME, type LocalTwin } from '#lib/twin/twin.ts';
import { TEST_CA_PATH } from '../support/https-recording-server.ts';

/**
 * CollectBatch's memory with eight large recordings at once, measured two ways:
 *
 * - on the twin, as its host counts it against the memory size (function-memory.ts: heap, Buffers, the runtime);
 * - in a Node process of its own running the deployed bundle (esbuild, as CDK builds it) with S3 over HTTPS, as on
 *   AWS: the kernel's high-water mark of its resident memory (VmHWM), which sees what the twin's count cannot
 *   (native memory such as TLS's copy of each part being sent: the twin's S3 is plain HTTP).
 *
 * The worst case lib-storage allows is also printed: per upload, `queueSize` parts in flight, the part being built
 * and its copy while Buffer.concat joins it.
 */
const COLLECT_BATCH = taskFunctions.find((task) => task.id === 'CollectBatch')!;
const FUNCTIONS_DIR = fileURLToPath(new URL('../../functions/', import.meta.url));
const TLS_DIR = new URL('../fixtures/tls/', import.meta.url);
const MiB = 2 ** 20;

export const worstCaseUploadBuffersMb = () =>
  (COLLECTION_CONCURRENCY * (RECORDING_UPLOAD_QUEUE_SIZE + 2) * RECORDING_UPLOAD_PART_BYTES) / MiB;

/**
 * The twin's peak for CollectBatch so far (the caller runs the collection first). `collect` answers once the sweep's
 * checkpoint says finished, which the last invocation writes before it returns: its figure comes with its end.
 */
export async function twinCollectBatchPeakMb(twin: LocalTwin): Promise<number> {
  while (twin.invocationsInFlight(COLLECT_BATCH.id) > 0) await new Promise((resolve) => setTimeout(resolve, 20));
  return twin.maxMemoryUsedMb(COLLECT_BATCH.id);
}

/**
 * Runs one CollectBatch invocation of `taskId`'s sweep `sweepId` in a fresh Node process from the bundle, against the
 * twin's stores (its own function's credentials, so its IAM front doors apply), S3 through a TLS terminator.
 */
export async function collectBatchInOwnProcess(
  twin: LocalTwin,
  taskId: string,
  sweepId: string,
): Promise<{ result: unknown; vmHwmMb: number; accountedMb: number; heapAtPeakMb: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'collect-batch-'));
  const s3Tls = await tlsTerminator(new URL(twin.twin.s3_endpoint));
  try {
    bundleFunction(join(FUNCTIONS_DIR, COLLECT_BATCH.handler), join(dir, 'bundle'), { sdkTracing: false });
    const runner = join(dir, 'runner.mjs');
    writeFileSync(runner, RUNNER);
    const endpoints = {
      dynamodb: twin.twin.dynamodb_endpoint,
      s3: `https://localhost:${(s3Tls.address() as AddressInfo).port}`,
      stepFunctions: twin.twin.step_functions_endpoint,
      ssm: twin.twin.ssm_endpoint,
      bedrock: 'http://127.0.0.1:9',
    };
    const dataDir = process.env.DATA_DIR ?? dir;
    const environment = {
      ...functionEnvironment(COLLECT_BATCH, endpoints, twin.credentialsOf(COLLECT_BATCH.id), {
        handoffEvents: join(dataDir, HANDOFF_EVENTS_FILE_NAME),
      }),
      NODE_EXTRA_CA_CERTS: TEST_CA_PATH,
      PATH: process.env.PATH ?? '',
    };
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        [runner, join(dir, 'bundle', 'index.mjs'), JSON.stringify({ task_id: taskId, sweep_id: sweepId })],
        { env: environment, maxBuffer: 16 * MiB },
        (error, out, err) => (error ? reject(new Error(`CollectBatch process failed: ${error.message}\n${err}`)) : resolve(out)),
      );
    });
    const figures = JSON.parse(stdout.trim().split('\n').pop()!) as {
      result: unknown;
      vmHwmBytes: number;
      accountedBytes: number;
      heapAtPeakBytes: number;
    };
    return {
      result: figures.result,
      vmHwmMb: figures.vmHwmBytes / MiB,
      accountedMb: figures.accountedBytes / MiB,
      heapAtPeakMb: figures.heapAtPeakBytes / MiB,
    };
  } finally {
    await new Promise((resolve) => s3Tls.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

export const runtimeBaselineMb = async () => (await runtimeBaselineBytes()) / MiB;

/** HTTPS in front of a plain HTTP store: bytes pass through untouched, so SigV4 signatures still hold. */
async function tlsTerminator(upstream: URL): Promise<TlsServer> {
  const server = createTlsServer(
    { key: readFileSync(new URL('server-key.pem', TLS_DIR)), cert: readFileSync(new URL('server.pem', TLS_DIR)) },
    (client) => {
      const store = connect(Number(upstream.port), upstream.hostname);
      const drop = () => {
        client.destroy();
        store.destroy();
      };
      client.on('error', drop).on('close', drop);
      store.on('error', drop).on('close', drop);
      client.pipe(store).pipe(client);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/**
 * The function's process: imports the bundle as Lambda's runtime does, invokes the handler once, and reports the
 * kernel's resident high-water mark (Linux: /proc/self/status) beside the isolate's own count, sampled as the twin
 * samples it.
 */
const RUNNER = `
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { getHeapStatistics } from 'node:v8';
let accounted = 0;
let heapAtPeak = 0;
const sample = () => {
  const heap = getHeapStatistics();
  const own = heap.total_physical_size + heap.malloced_memory + heap.external_memory;
  if (own > accounted) [accounted, heapAtPeak] = [own, heap.total_physical_size + heap.malloced_memory];
};
const sampler = setInterval(sample, 10);
const [bundle, event] = process.argv.slice(2);
const { handler } = await import(bundle);
const deadline = Date.now() + 900_000;
const context = {
  functionName: 'CollectBatch', functionVersion: '$LATEST', awsRequestId: randomUUID(), memoryLimitInMB: '${COLLECT_BATCH.memorySize ?? 256}',
  invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:CollectBatch', logGroupName: '/aws/lambda/CollectBatch', logStreamName: 'local',
  callbackWaitsForEmptyEventLoop: false, getRemainingTimeInMillis: () => deadline - Date.now(), done() {}, fail() {}, succeed() {},
};
const result = await handler(JSON.parse(event), context);
sample();
clearInterval(sampler);
const vmHwmKb = Number(/^VmHWM:\\s+(\\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
process.stdout.write('\\n' + JSON.stringify({ result, vmHwmBytes: vmHwmKb * 1024, accountedBytes: accounted, heapAtPeakBytes: heapAtPeak }) + '\\n');
`;
