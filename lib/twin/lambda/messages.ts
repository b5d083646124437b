import type { CostUnits } from '#shared/metering/cost-meter.ts';
import type { InvokePayload } from './invoke-payload.ts';
import type { MemoryLimit } from './function-memory.ts';

/** What the twin and a function's worker thread say to each other: invocations one way, results and stream bytes back. */
export interface WorkerSetup {
  functionName: string;
  /** file: URL of the module exporting `handler`. */
  handlerUrl: string;
  /** Whether the route table says the function streams its response. */
  streaming: boolean;
  /** A streaming function's bytes are held until this many wait, as Lambda is reported to (0: passed on at once). */
  streamHoldBytes: number;
  /** The function's memory size (the context's `memoryLimitInMB`) and what the worker holds itself to. */
  memoryMb: number;
  memory: MemoryLimit;
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
}

export interface StreamPrelude {
  statusCode?: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
}

export type ToWorker =
  | ({ kind: 'invoke'; id: number; requestId: string; timeoutMs: number } & InvokePayload)
  /** The client went away, or the gateway cut the stream: sent only when the twin is told to (`streamCallerGone`); Lambda never does. */
  | { kind: 'streamClosed'; id: number }
  /** The last chunk left for the client's socket: the function's response stream may take the next (backpressure). */
  | { kind: 'chunkTaken'; id: number };

export type FromWorker =
  /** The handler is being called: initialization is over. */
  | { kind: 'started'; id: number }
  | { kind: 'result'; id: number; payload: string }
  | { kind: 'error'; id: number; error: SerializedError }
  | { kind: 'initError'; error: SerializedError }
  | { kind: 'prelude'; id: number; prelude: StreamPrelude }
  | { kind: 'chunk'; id: number; data: Uint8Array }
  | { kind: 'end'; id: number }
  /** The handler destroyed its response stream before its end: the connection is cut. */
  | { kind: 'abort'; id: number }
  | { kind: 'cost'; operation: string; units: CostUnits }
  /** The most memory the environment has used so far, sent as each invocation ends (Lambda's "Max Memory Used"). */
  | { kind: 'memoryPeak'; bytes: number }
  /** Past the memory size: the worker runs nothing more and waits to be terminated. */
  | { kind: 'outOfMemory'; bytes: number };

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { name: 'Error', message: String(error) };
}
