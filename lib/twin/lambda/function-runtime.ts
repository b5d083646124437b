import { parentPort, workerData } from 'node:worker_threads';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { onRequestCost } from '#shared/metering/cost-meter.ts';
import { localContext } from '#lib/twin/api-gateway-event.ts';
import { HeldResponseStream, installLambdaStreamingGlobals, isStreamingHandler } from '#lib/twin/lambda-streaming.ts';
import { freezeThread, MemoryWatch } from './function-memory.ts';
import { eventOf } from './invoke-payload.ts';
import { serializeError, type FromWorker, type StreamPrelude, type ToWorker, type WorkerSetup } from './messages.ts';

/**
 * The Lambda runtime of one function on the twin, in a worker thread of its own: its own module instances, its
 * own `process.env`, one handler. The twin's host (function-host.ts) sends invocations and relays results.
 */
const setup = workerData as WorkerSetup;
const port = parentPort!;
const post = (message: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer);

type Handler = (event: unknown, contextOrStream: unknown, context?: unknown) => Promise<unknown>;

/**
 * The response stream Lambda hands a streaming handler: bytes go to the twin, which writes them to the client. A
 * chunk is done once the twin has handed it to the client's socket, so a client that reads slowly fills this stream's
 * buffer, in the function's own memory, and `write()` answers false: the backpressure a Lambda function gets from
 * the runtime's HTTP request to the Runtime API. What waits beyond that (the sockets' kernel buffers) is nobody's
 * function memory, here as on Lambda.
 */
class WorkerResponseStream extends Writable {
  private taken: ((error?: Error | null) => void) | undefined;
  private ended = false;

  constructor(private readonly id: number) {
    // Strings stay strings until they are copied out to the twin: no Buffer of each write left behind for the GC.
    super({ decodeStrings: false });
  }

  setPrelude(prelude: StreamPrelude): void {
    post({ kind: 'prelude', id: this.id, prelude: JSON.parse(JSON.stringify(prelude)) as StreamPrelude });
  }

  /** The twin has handed the last chunk to the client's socket. */
  chunkTaken(): void {
    const callback = this.taken;
    this.taken = undefined;
    callback?.();
  }

  private send(chunks: readonly (Buffer | string)[], callback: (error?: Error | null) => void): void {
    this.taken = callback;
    // One copy, handed over to the twin's thread (transferred, not cloned): nothing of it stays in the function's memory.
    const data = new Uint8Array(chunks.reduce((bytes, chunk) => bytes + Buffer.byteLength(chunk), 0));
    let offset = 0;
    for (const chunk of chunks) {
      if (typeof chunk === 'string') {
        offset += Buffer.from(data.buffer, offset).write(chunk);
      } else {
        data.set(chunk, offset);
        offset += chunk.byteLength;
      }
    }
    post({ kind: 'chunk', id: this.id, data }, [data.buffer]);
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.send([chunk], callback);
  }

  /** What waited while the last chunk was on its way goes as one message. */
  override _writev(chunks: { chunk: Buffer | string }[], callback: (error?: Error | null) => void): void {
    this.send(
      chunks.map(({ chunk }) => chunk),
      callback,
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.ended = true;
    post({ kind: 'end', id: this.id });
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.ended) post({ kind: 'abort', id: this.id });
    this.taken = undefined;
    callback(error);
  }
}

// Lambda counts initialization against the memory size too: the watch starts before the handler's module loads.
const memory = new MemoryWatch(setup.memory, (bytes) => {
  post({ kind: 'outOfMemory', bytes });
  return freezeThread();
});
memory.enter();

installLambdaStreamingGlobals();
onRequestCost((operation, units) => post({ kind: 'cost', operation, units: { ...units } }));

const loading = import(setup.handlerUrl).then((module: { handler?: Handler }) => {
  const handler = module.handler;
  if (typeof handler !== 'function') throw new Error(`${setup.handlerUrl} exports no handler`);
  // API Gateway streams only from a function whose runtime streams: a route and its handler must agree.
  if (isStreamingHandler(handler) !== setup.streaming) {
    throw new Error(
      `${setup.functionName}: the route table says streaming=${setup.streaming}, the handler ` +
        `${setup.streaming ? 'does not stream' : 'streams'}`,
    );
  }
  return handler;
});
loading.then(
  () => memory.leave(),
  (error: unknown) => {
    memory.leave();
    post({ kind: 'initError', error: serializeError(error) });
  },
);

const streams = new Map<number, Writable>();
/** The twin's end of each open response stream, by invocation, until it closes. */
const toTwin = new Map<number, WorkerResponseStream>();

// Deliberately not awaited: the port ignores a listener's result; onMessage() posts each outcome, failures included, to the host.
port.on('message', (message: ToWorker) => void onMessage(message));

async function onMessage(message: ToWorker): Promise<void> {
  if (message.kind === 'streamClosed') return void streams.get(message.id)?.destroy();
  if (message.kind === 'chunkTaken') return void toTwin.get(message.id)?.chunkTaken();
  const { id } = message;
  memory.enter();
  let outcome: FromWorker;
  try {
    const handler = await loading;
    const event = eventOf(message);
    const context = {
      ...localContext(setup.functionName, message.timeoutMs),
      awsRequestId: message.requestId,
      memoryLimitInMB: String(setup.memoryMb),
    };
    if (setup.streaming) {
      const twinSide = new WorkerResponseStream(id);
      toTwin.set(id, twinSide);
      twinSide.once('close', () => toTwin.delete(id));
      // Told to hold, the twin passes a small write on only once more bytes follow or the response ends, as Lambda is
      // reported to (lambda-streaming.ts).
      const stream = setup.streamHoldBytes > 0 ? new HeldResponseStream(twinSide, setup.streamHoldBytes) : twinSide;
      streams.set(id, stream);
      post({ kind: 'started', id });
      await handler(event, stream, context);
      // A handler that ended its stream without waiting for it: what it wrote still goes out before the result (the
      // stream passes a chunk on only once the client's socket took the one before).
      if (stream.writableEnded && !stream.destroyed) await finished(stream).catch(() => undefined);
      outcome = { kind: 'result', id, payload: 'null' };
    } else {
      // Lambda hands back the JSON of what the handler returned.
      outcome = { kind: 'result', id, payload: JSON.stringify((await handler(event, context)) ?? null) };
    }
  } catch (error) {
    outcome = { kind: 'error', id, error: serializeError(error) };
  } finally {
    streams.delete(id);
  }
  // Checked before the outcome goes out: past the limit, the environment dies here and the caller gets no result.
  memory.leave();
  post({ kind: 'memoryPeak', bytes: memory.peakBytes });
  post(outcome);
}
