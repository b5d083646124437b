import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { reportRequestCost } from '#shared/metering/cost-meter.ts';
import type { LocalResponseStream } from '#lib/twin/lambda-streaming.ts';
import type { FaultPlan } from '#lib/twin/faults.ts';
import { MEMORY_SAMPLE_MS, MiB, outOfMemoryMessage, runtimeBaselineBytes } from './function-memory.ts';
import { exceedsPayloadBytes, toInvokePayload, type InvokePayload } from './invoke-payload.ts';
import type { FromWorker, SerializedError, ToWorker, WorkerSetup } from './messages.ts';

/** Lambda's limit on a synchronous invocation's event and on its response (6 MB each). */
export const LAMBDA_SYNC_PAYLOAD_BYTES = 6_291_556;

export interface LocalLambdaOptions {
  functionName: string;
  /** Absolute path of the module exporting `handler`. */
  handlerFile: string;
  /** All the function's `process.env` (function-environment.ts). */
  environment: Record<string, string>;
  timeoutSeconds: number;
  streaming: boolean;
  /**
   * A streaming function's bytes are held until this many wait, or the response ends, as Lambda is reported to
   * (lambda-streaming.ts, HeldResponseStream). Default 0: every write is passed on at once.
   */
  streamHoldBytes?: number;
  /**
   * Tell a streaming function that its caller left (its response stream is destroyed), which Lambda never does
   * (lambda-streaming.ts, TWIN_STREAM_CALLER_GONE_ENV). Default false: the function runs on, its writes going nowhere.
   */
  streamCallerGone?: boolean;
  /**
   * Lambda's memory size. The worker's heap is held where the Lambda runtime holds it, and everything the function
   * holds (heap, Buffers, the runtime's own share: function-memory.ts) to the size itself: past it, the invocation
   * fails with `Runtime.OutOfMemory` and the environment is replaced.
   */
  memoryMb: number;
  /** Each line the function writes to stdout or stderr (what CloudWatch Logs would get); also echoed to the twin's own. */
  onLogLine?: (line: string) => void;
  /**
   * `TWIN_FAULTS`'s `lambda:` kinds: an invocation delayed before its handler, failed without it, or crashed after it.
   * Unset, an invocation takes no draw, no timer and no wrapper.
   */
  faults?: FaultPlan;
}

/**
 * The V8 heap the Lambda Node.js runtime gives a function of `memoryMb`: its bootstrap passes a tenth of the memory as
 * new space (`--max-semi-space-size` half of it) and the rest as `--max-old-space-size`, 231 MB and 12 MB at 256 MB.
 * A worker's young generation is sized in semi-spaces (three of them), so the worker's heap ends where the function's
 * would, never later.
 */
function lambdaHeapLimits(memoryMb: number): { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb: number } {
  const newSpaceMb = Math.floor(memoryMb / 10);
  return { maxOldGenerationSizeMb: memoryMb - newSpaceMb, maxYoungGenerationSizeMb: 3 * Math.floor(newSpaceMb / 2) };
}

/** What an invocation's caller may learn about how it ran (the twin's request lines show it). */
export interface InvocationTrace {
  /** This invocation started the function's environment: its first, or the first after a crash, a failed init or OOM. */
  cold: boolean;
}

/** An error the Lambda service reports instead of the function's result. */
export class LambdaInvokeError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

/** What Lambda reports when the function's process exits before answering (a crash, `process.exit(1)`). */
function runtimeExitError(requestId: string): LambdaInvokeError {
  return new LambdaInvokeError('Runtime.ExitError', `RequestId: ${requestId} Error: Runtime exited with error: exit status 1`);
}

interface Pending {
  requestId: string;
  resolve(payload: unknown): void;
  reject(error: Error): void;
  stream?: LocalResponseStream;
  timer: NodeJS.Timeout;
  /** The environment running it: a crash fails only the invocations of its own environment. */
  worker: Worker;
  /** `lambda:crash-after-write` drew this invocation: its handler runs, its answer is lost with its environment. */
  crash?: { wrote: boolean };
  /** Lets the function's stream take its next chunk: the last chunk is still on its way to the client's socket. */
  untaken?: () => void;
}

/**
 * Lambda freezes an environment between invocations: nothing of V8 runs in it then. A worker thread idles instead, and
 * V8's memory reducer, which watches for an idle isolate, would collect it and shrink its young generation (24 MB of
 * semi-spaces at 256 MB) until the next burst grows it back: the function's memory, and the twin's process, would rise
 * and fall by some 20 MB a function with the gaps between invocations, as no Lambda function's does. V8 reads the
 * flag as it sets up an isolate, so it reaches the workers started from here on, not the twin's own thread.
 */
setFlagsFromString('--no-memory-reducer');

// Each worker loads TypeScript through tsx's loader, registered in the thread before the handler is imported.
const TSX_LOADER = import.meta.resolve('tsx/esm/api');
const RUNTIME = new URL('./function-runtime.ts', import.meta.url).href;
const BOOTSTRAP =
  `import(${JSON.stringify(TSX_LOADER)})` + `.then(({ register }) => { register(); return import(${JSON.stringify(RUNTIME)}); })`;

function toError(error: SerializedError): Error {
  const rebuilt = new LambdaInvokeError(error.name, error.message);
  if (error.stack) rebuilt.stack = error.stack;
  return rebuilt;
}

/**
 * One function on the twin, isolated as on Lambda: a worker thread started on first use (a cold start), with its
 * own module instances and only its own environment, held to its memory size. A crashed, failed-to-initialize or
 * out-of-memory worker is replaced at the next invocation, as Lambda replaces an execution environment.
 */
export class LocalLambda {
  private worker: Worker | undefined;
  /** Environments given up after a crash fault, still finishing what they were running when it came. */
  private readonly retiring = new Set<Worker>();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private peakBytes = 0;
  private readonly baseline: Promise<number>;

  constructor(private readonly options: LocalLambdaOptions) {
    // Measured while the twin starts, so a first invocation seldom waits for it; a failure is the invocation's to report.
    this.baseline = runtimeBaselineBytes();
    this.baseline.catch(() => undefined);
  }

  /** Invocations whose handler has not finished (a streaming one runs until the handler returns, not until the client leaves). */
  get inFlight(): number {
    return this.pending.size;
  }

  /** The most memory any environment of this function has used so far, as counted against its memory size (MB of 2^20 bytes). */
  get maxMemoryUsedMb(): number {
    return this.peakBytes / MiB;
  }

  /**
   * A request-response invocation; resolves with the handler's JSON result, rejects with its error. `body`: the
   * bytes of a proxy event's request body (its `body` is null), put into the event in the function's worker.
   */
  invoke(event: unknown, body?: Uint8Array, trace?: InvocationTrace): Promise<unknown> {
    return this.start(event, undefined, body, trace);
  }

  /** A response-streaming invocation: the handler's prelude and bytes go to `stream` as it writes them. */
  async invokeStreaming(event: unknown, stream: LocalResponseStream, body?: Uint8Array, trace?: InvocationTrace): Promise<void> {
    await this.start(event, stream, body, trace);
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = [...(this.worker ? [this.worker] : []), ...this.retiring];
    this.worker = undefined;
    this.retiring.clear();
    this.failAll(new LambdaInvokeError('Runtime.ExitError', 'The twin is shutting down'));
    await Promise.all(workers.map((worker) => worker.terminate()));
  }

  private start(event: unknown, stream?: LocalResponseStream, body?: Uint8Array, trace?: InvocationTrace): Promise<unknown> {
    const invocation = toInvokePayload(event, body);
    if (exceedsPayloadBytes(invocation, LAMBDA_SYNC_PAYLOAD_BYTES)) {
      return Promise.reject(
        new LambdaInvokeError(
          'RequestEntityTooLargeException',
          `Request must be smaller than ${LAMBDA_SYNC_PAYLOAD_BYTES} bytes for the InvokeFunction operation`,
        ),
      );
    }
    if (this.options.faults) return this.startWithFaults(this.options.faults, invocation, stream, trace);
    // Invocations wait for the same measurement, so they still reach the worker in the order they came.
    return this.baseline.then((baselineBytes) => this.dispatch(invocation, baselineBytes, stream, trace));
  }

  /**
   * The plan's `lambda:` faults around one invocation. All three kinds draw on every invocation, so that one kind's
   * rate never shifts another's sequence.
   */
  private async startWithFaults(
    faults: FaultPlan,
    invocation: InvokePayload,
    stream?: LocalResponseStream,
    trace?: InvocationTrace,
  ): Promise<unknown> {
    const functionName = this.options.functionName;
    const error = faults.draw('lambda:error');
    const crash = faults.draw('lambda:crash-after-write');
    const delay = faults.draw('lambda:delay');
    if (error) {
      // The runtime exits before the handler runs; its environment goes with it, as after any crash.
      const failure = runtimeExitError(randomUUID());
      faults.inject({ kind: 'lambda:error', functionName, outcome: failure.name });
      if (this.worker) this.retire(this.worker);
      throw failure;
    }
    if (delay) {
      faults.inject({ kind: 'lambda:delay', functionName, outcome: `${faults.delayMs} ms` });
      // Before the invocation reaches its environment: neither its timeout nor a stream's idle limit counts it.
      await new Promise((resolve) => setTimeout(resolve, faults.delayMs));
    }
    const baselineBytes = await this.baseline;
    return this.dispatch(invocation, baselineBytes, stream, trace, crash);
  }

  private dispatch(
    invocation: InvokePayload,
    baselineBytes: number,
    stream?: LocalResponseStream,
    trace?: InvocationTrace,
    crash = false,
  ): Promise<unknown> {
    if (this.closed) return Promise.reject(new LambdaInvokeError('Runtime.ExitError', 'The twin is shutting down'));
    if (trace) trace.cold = this.worker === undefined;
    const worker = this.ensureWorker(baselineBytes);
    const id = this.nextId++;
    const requestId = randomUUID();
    const timeoutMs = this.options.timeoutSeconds * 1000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        // Lambda stops the invocation at its timeout; whatever the handler does next is lost.
        this.settle(id)?.reject(
          new LambdaInvokeError('Sandbox.Timedout', `Task timed out after ${this.options.timeoutSeconds.toFixed(2)} seconds`),
        );
      }, timeoutMs);
      this.pending.set(id, { requestId, resolve, reject, stream, timer, worker, ...(crash ? { crash: { wrote: false } } : {}) });
      stream?.once('close', () => {
        const pending = this.pending.get(id);
        if (!pending) return;
        // The client left: the chunk it had not taken goes nowhere, and so will every later one, as on Lambda.
        pending.untaken?.();
        // Told only when the twin is told to: on Lambda a function whose caller left runs on to its end. To the
        // environment running it, which is no longer the function's current one once a crash retired it.
        if (this.options.streamCallerGone) this.post({ kind: 'streamClosed', id }, worker);
      });
      this.post({ kind: 'invoke', id, requestId, ...invocation, timeoutMs }, worker);
    });
  }

  /** Every message names its environment: after a crash fault the function has two (the retiring one and the new one). */
  private post(message: ToWorker, worker: Worker): void {
    worker.postMessage(message);
  }

  private settle(id: number): Pending | undefined {
    const pending = this.pending.get(id);
    if (!pending) return undefined;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if (this.retiring.has(pending.worker)) this.endIfIdle(pending.worker);
    return pending;
  }

  /** Fails the invocations of `worker`'s environment, or every invocation when no worker is named. */
  private failAll(error: Error | ((pending: Pending) => Error), worker?: Worker): void {
    for (const [id, running] of [...this.pending]) {
      if (worker && running.worker !== worker) continue;
      const pending = this.settle(id);
      pending?.reject(typeof error === 'function' ? error(pending) : error);
    }
  }

  /**
   * As after a crash: the next invocation starts a fresh environment (a cold start). On Lambda each environment runs
   * one invocation at a time; here one worker serves them all, so the others it was running finish before it goes.
   */
  private retire(worker: Worker): void {
    if (this.worker === worker) this.worker = undefined;
    this.retiring.add(worker);
    this.endIfIdle(worker);
  }

  private endIfIdle(worker: Worker): void {
    for (const pending of this.pending.values()) if (pending.worker === worker) return;
    this.retiring.delete(worker);
    void worker.terminate();
  }

  /** The handler has run to its end, every write made: its answer is replaced by the crash of its environment. */
  private crashAfterWrite(pending: Pending, worker: Worker): void {
    // A stream that sent bytes is cut without its end; one that sent none leaves the gateway its 502.
    if (pending.crash?.wrote) pending.stream?.destroy();
    const failure = runtimeExitError(pending.requestId);
    this.options.faults?.inject({ kind: 'lambda:crash-after-write', functionName: this.options.functionName, outcome: failure.name });
    this.retire(worker);
    pending.reject(failure);
  }

  private ensureWorker(baselineBytes: number): Worker {
    if (this.worker) return this.worker;
    const setup: WorkerSetup = {
      functionName: this.options.functionName,
      handlerUrl: new URL(`file://${this.options.handlerFile}`).href,
      streaming: this.options.streaming,
      streamHoldBytes: this.options.streamHoldBytes ?? 0,
      memoryMb: this.options.memoryMb,
      memory: { limitBytes: this.options.memoryMb * MiB, baselineBytes, sampleMs: MEMORY_SAMPLE_MS },
    };
    const worker = new Worker(BOOTSTRAP, {
      eval: true,
      workerData: setup,
      env: this.options.environment,
      resourceLimits: lambdaHeapLimits(this.options.memoryMb),
      stdout: true,
      stderr: true,
    });
    forwardLines(worker.stdout, process.stdout, this.options.onLogLine);
    forwardLines(worker.stderr, process.stderr, this.options.onLogLine);
    worker.on('message', (message: FromWorker) => this.receive(worker, message));
    // What a worker throws need not be an Error: a function's code may throw any value.
    worker.on('error', (error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error);
      this.discard(worker, new LambdaInvokeError('Runtime.ExitError', `${this.options.functionName} crashed: ${reason}`));
    });
    worker.on('exit', (code) =>
      this.discard(worker, new LambdaInvokeError('Runtime.ExitError', `${this.options.functionName} exited with code ${code}`)),
    );
    this.worker = worker;
    return worker;
  }

  /** The environment is gone: its invocations fail, and the next one starts a fresh environment. */
  private discard(worker: Worker, error: Error | ((pending: Pending) => Error)): void {
    if (this.worker === worker) this.worker = undefined;
    else if (!this.retiring.delete(worker)) return;
    this.failAll(error, worker);
    void worker.terminate();
  }

  private receive(worker: Worker, message: FromWorker): void {
    switch (message.kind) {
      case 'cost':
        return reportRequestCost(message.operation, message.units);
      case 'memoryPeak':
        this.peakBytes = Math.max(this.peakBytes, message.bytes);
        return;
      case 'outOfMemory':
        // As Lambda reports an environment the kernel killed at its memory size, to each invocation it was running.
        this.peakBytes = Math.max(this.peakBytes, message.bytes);
        return this.discard(worker, (pending) => new LambdaInvokeError('Runtime.OutOfMemory', outOfMemoryMessage(pending.requestId)));
      case 'initError':
        // Lambda reports an initialization error to the invocation and tries a fresh environment next time.
        return this.discard(worker, toError(message.error));
      case 'started':
        return this.pending.get(message.id)?.stream?.startIdleClock();
      case 'prelude':
        return this.pending.get(message.id)?.stream?.setPrelude(message.prelude);
      case 'chunk': {
        const pending = this.pending.get(message.id);
        if (pending?.crash) pending.crash.wrote = true;
        const stream = pending?.stream;
        // The function's stream takes its next chunk once this one has gone to the client's socket: a slow reader
        // backs up into the function (its memory, its `write()` answering false), never into the twin.
        let done = false;
        const taken = () => {
          if (done) return;
          done = true;
          if (pending?.untaken === taken) pending.untaken = undefined;
          this.post({ kind: 'chunkTaken', id: message.id }, worker);
        };
        if (stream && !stream.destroyed) {
          if (pending) pending.untaken = taken;
          stream.write(Buffer.from(message.data), taken);
        } else taken();
        return;
      }
      case 'abort':
        return void this.pending.get(message.id)?.stream?.destroy();
      case 'end': {
        const pending = this.pending.get(message.id);
        // A crashing invocation's stream never gets its proper end (crashAfterWrite cuts it).
        if (pending?.stream && !pending.stream.destroyed && !pending.crash) pending.stream.end();
        return;
      }
      case 'error': {
        const pending = this.settle(message.id);
        if (pending?.crash) return this.crashAfterWrite(pending, worker);
        return pending?.reject(toError(message.error));
      }
      case 'result': {
        const pending = this.settle(message.id);
        if (!pending) return;
        if (pending.crash) return this.crashAfterWrite(pending, worker);
        if (Buffer.byteLength(message.payload) > LAMBDA_SYNC_PAYLOAD_BYTES) {
          return pending.reject(
            new LambdaInvokeError(
              'Function.ResponseSizeTooLarge',
              `Response payload size exceeded maximum allowed payload size (${LAMBDA_SYNC_PAYLOAD_BYTES} bytes).`,
            ),
          );
        }
        return pending.resolve(JSON.parse(message.payload));
      }
    }
  }
}

/** A function's output, line by line: to whoever watches the logs, and on to the twin's own stream as before. */
function forwardLines(from: NodeJS.ReadableStream, to: NodeJS.WritableStream, onLine: ((line: string) => void) | undefined): void {
  let partial = '';
  from.on('data', (chunk: Buffer | string) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line) continue;
      onLine?.(line);
      if (shown(line)) to.write(`${line}\n`);
    }
  });
}

/**
 * What the twin shows of a function's output: not its metrics (EMF records) nor its INFO and DEBUG lines, which a
 * function writes as on AWS (and the log meter counts), but warnings, errors and anything not JSON.
 */
function shown(line: string): boolean {
  if (!line.startsWith('{')) return true;
  return !line.startsWith('{"_aws":') && !/"level":"(?:INFO|DEBUG|TRACE)"/.test(line.slice(0, 80));
}
