import { parentPort, workerData } from 'node:worker_threads';
import { Writable } from 'node:stream';
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
const post = (message: FromWorker) => port.postMessage(message);

type Handler = (event: unknown, contextOrStream: unknown, context?: unknown) => Promise<unknown>;

/** The response stream Lambda hands a streaming handler: bytes go to the twin, which writes them to the client. */
class WorkerResponseStream extends Writable {
  constructor(private readonly id: number) {
    super();
  }

  setPrelude(prelude: StreamPrelude): void {
    post({ kind: 'prelude', id: this.id, prelude: JSON.parse(JSON.stringify(prelude)) as StreamPrelude });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    post({ kind: 'chunk', id: this.id, data: new Uint8Array(chunk) });
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    post({ kind: 'end', id: this.id });
    callback();
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
    throw new Error(`${setup.functionName}: the route table says streaming=${setup.streaming}, the handler ${setup.streaming ? 'does not stream' : 'streams'}`);
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

// Deliberately not awaited: the port ignores a listener's result; onMessage() posts each outcome, failures included, to the host.
port.on('message', (message: ToWorker) => void onMessage(message));

async function onMessage(message: ToWorker): Promise<void> {
  if (message.kind === 'streamClosed') return void streams.get(message.id)?.destroy();
  const { id } = message;
  memory.enter();
  let outcome: FromWorker;
  try {
    const handler = await loading;
    const event = eventOf(message);
    const context = { ...localContext(setup.functionName, message.timeoutMs), awsRequestId: message.requestId, memoryLimitInMB: String(setup.memoryMb) };
    if (setup.streaming) {
      // Lambda passes a small write on only once more bytes follow or the response ends (lambda-streaming.ts).
      const stream = new HeldResponseStream(new WorkerResponseStream(id));
      streams.set(id, stream);
      post({ kind: 'started', id });
      await handler(event, stream, context);
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
