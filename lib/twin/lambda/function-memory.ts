import { execFile } from 'node:child_process';
import { getHeapStatistics } from 'node:v8';

/**
 * How the twin holds a function to its memory size as Lambda does. Lambda counts everything its process holds
 * resident (the kernel kills the process at the limit: `Runtime.OutOfMemory`), buffers included; a worker thread's
 * `resourceLimits` bound only its V8 heap, and Buffers live outside it. Every worker shares the twin's process, so
 * the process's RSS says nothing about one function. What one worker's isolate holds is its own, though (checked on
 * Node 24: in a worker these move with that worker's allocations only, while `rss` is the whole process's):
 *
 * - the V8 heap's committed pages (`total_physical_size`) and V8's own malloc'd memory (`malloced_memory`);
 * - external memory (`external_memory`, what `process.memoryUsage().external` reports): every ArrayBuffer and Buffer
 *   of the isolate (`arrayBuffers` is part of it), the chunks a socket's reads arrive in included, and garbage
 *   Buffers until a GC frees them (resident on Lambda too).
 *
 * To that comes the runtime's own share, which a Lambda process has and a worker does not: the resident memory of a
 * fresh `node` process of this same binary minus the heap and external memory it holds itself (about 37 MiB on
 * Node 24 x64), measured once per twin (runtimeBaselineBytes).
 *
 * What this cannot see, so a function can use more on Lambda than here: native memory Node or a library takes
 * without reporting it to V8, above all TLS's encrypted copy of what is being sent (a 5 MiB S3 part written to an
 * HTTPS socket is encrypted whole into OpenSSL's buffers: RSS grows by 5 MiB, external memory does not; the twin's
 * stores speak plain HTTP), OpenSSL's per-connection state, zlib and hash contexts; memory freed but kept by the
 * allocator; Lambda's own runtime client (its bootstrap, which a bare `node` does not run); and a peak that comes and
 * goes within one synchronous stretch of JavaScript, between two samples. (The kernel's socket buffers are not the
 * function's on Lambda either.) It sees more than Lambda in two ways: the twin loads a function's modules unbundled,
 * as transpiled TypeScript (a larger heap than the deployed bundle's), and concurrent invocations of a function share
 * one worker, where Lambda gives each an environment of its own. `npm run bench` (test/bench/collection-memory.ts)
 * sets this count beside the resident high-water mark of the deployed bundle in a process of its own.
 */
export interface MemoryLimit {
  /** The function's memory size, in bytes. */
  limitBytes: number;
  /** The runtime's share, in bytes (runtimeBaselineBytes). */
  baselineBytes: number;
  /** How often a busy worker samples its usage. */
  sampleMs: number;
}

export const MiB = 2 ** 20;

/**
 * Often enough that a transfer filling its buffers (at some 100 MB/s here, 5 MiB in 50 ms) cannot pass the limit
 * unseen between two samples; one sample costs well under a microsecond (no system call).
 */
export const MEMORY_SAMPLE_MS = 10;

/** What one isolate counts against its function's memory size: its own memory plus the runtime's share. */
function accountedBytes(baselineBytes: number): number {
  const heap = getHeapStatistics();
  return baselineBytes + heap.total_physical_size + heap.malloced_memory + heap.external_memory;
}

/**
 * The worker's side: samples while the function works (initialization, invocations), and once more as each
 * invocation ends, so a result is never delivered from an environment that was past its limit. Between
 * invocations Lambda freezes the environment, so nothing is sampled then.
 */
export class MemoryWatch {
  private peak = 0;
  private busy = 0;
  private timer: NodeJS.Timeout | undefined;

  /** `exceeded` must not return: the environment is dead from that moment. */
  constructor(
    private readonly limit: MemoryLimit,
    private readonly exceeded: (bytes: number) => never,
  ) {}

  get peakBytes(): number {
    return this.peak;
  }

  check(): void {
    const used = accountedBytes(this.limit.baselineBytes);
    if (used > this.peak) this.peak = used;
    if (used > this.limit.limitBytes) this.exceeded(used);
  }

  enter(): void {
    if (this.busy++ === 0) this.timer = setInterval(() => this.check(), this.limit.sampleMs);
    this.check();
  }

  leave(): void {
    this.check();
    if (--this.busy === 0) clearInterval(this.timer);
  }
}

/**
 * What the kernel's SIGKILL does to a Lambda process: nothing of the function runs any more, no callback, no write
 * to a store, no log line. The thread blocks until the host terminates it (terminate() interrupts the wait).
 */
export function freezeThread(): never {
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}

const PROBE = [
  'globalThis.gc();',
  'const heap = require("node:v8").getHeapStatistics();',
  'process.stdout.write(JSON.stringify({ rss: process.memoryUsage().rss, own: heap.total_physical_size + heap.malloced_memory + ' +
    'heap.external_memory }));',
].join('');

let baseline: Promise<number> | undefined;

/**
 * The resident memory a Node process of this binary holds before any function code: RSS of a fresh process minus
 * what its isolate holds (a worker counts its own isolate itself). Without NODE_OPTIONS, so no loader the twin
 * or its tests run under is counted.
 */
export function runtimeBaselineBytes(): Promise<number> {
  baseline ??= new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', '-e', PROBE], { env: {}, timeout: 30_000 }, (error, stdout) => {
      if (error) return reject(new Error(`Could not measure the Node runtime's own memory: ${error.message}`));
      const { rss, own } = JSON.parse(stdout) as { rss: number; own: number };
      resolve(Math.max(0, rss - own));
    });
  });
  return baseline;
}

/** The message Lambda reports for an invocation whose environment was killed at its memory size. */
export function outOfMemoryMessage(requestId: string): string {
  return `RequestId: ${requestId} Error: Runtime exited with error: signal: killed`;
}
