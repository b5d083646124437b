import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';

/**
 * The Lambda runtime's response-streaming globals (`awslambda.streamifyResponse`, `HttpResponseStream.from`),
 * which middy uses for streaming routes. On AWS the runtime provides them; locally they write to the HTTP response.
 */
const STREAMING = Symbol.for('local-twin.streaming-handler');

interface Prelude {
  statusCode?: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
}

export interface StreamLimits {
  /** API Gateway ends a streamed response after this long without a byte. */
  idleTimeoutMs: number;
  /** And after the integration timeout, whatever is flowing. */
  totalTimeoutMs: number;
}

export class LocalResponseStream extends Writable {
  private prelude: Prelude = {};
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly totalTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly response: ServerResponse,
    private readonly limits?: StreamLimits,
  ) {
    super();
    response.once('close', () => {
      this.clearTimers();
      this.destroy();
    });
    if (limits) this.totalTimer = setTimeout(() => this.cut(), limits.totalTimeoutMs);
  }

  /**
   * The function has started running its handler: silence counts from now. The twin's cold start (a worker thread
   * compiling TypeScript, about a second) is far slower than a Lambda bundle's and is not counted against it.
   */
  startIdleClock(): void {
    if (!this.idleTimer) this.armIdleTimer();
  }

  private armIdleTimer(): void {
    if (!this.limits || this.destroyed) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.cut(), this.limits.idleTimeoutMs);
  }

  private clearTimers(): void {
    clearTimeout(this.idleTimer);
    clearTimeout(this.totalTimer);
  }

  /** The connection ends without a proper end of the body, as when API Gateway gives up on the stream. */
  private cut(): void {
    this.clearTimers();
    this.response.destroy();
  }

  setPrelude(prelude: Prelude): void {
    this.prelude = prelude;
  }

  private writeHead(): void {
    if (this.response.headersSent) return;
    const headers: Record<string, string | string[]> = { ...this.prelude.headers };
    for (const [name, values] of Object.entries(this.prelude.multiValueHeaders ?? {})) headers[name] = values;
    this.response.writeHead(this.prelude.statusCode ?? 200, headers);
    // Server-sent events must reach the client as they are written, not when a buffer fills.
    this.response.flushHeaders();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.writeHead();
    if (chunk.byteLength > 0) this.armIdleTimer();
    this.response.write(chunk, () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.clearTimers();
    this.writeHead();
    this.response.end(() => callback());
  }

  /** Destroyed before its end (the function's response stream was destroyed): the client's connection is cut. */
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.clearTimers();
    if (!this.writableFinished) this.response.destroy();
    callback(error);
  }
}

/**
 * What Lambda's response streaming has been reported to do with small writes (AWS documents none of it): the Node.js
 * runtime sends every write to the Runtime API at once, but the service behind it may hold a write back until more
 * bytes follow or the response ends (aws-lambda-nodejs-runtime-interface-client issues 94 and 102; reports range
 * from about 15 KB to 100 KB, through Function URLs; none was measured on a REST API stage). The twin holds nothing
 * unless told to (`TWIN_STREAM_HOLD_BYTES`, the `streamHoldBytes` option); this is the largest hold reported, what
 * `TWIN_STREAM_HOLD_BYTES=102400` models.
 */
export const LAMBDA_STREAM_HOLD_BYTES = 100 * 1024;

/** `npm start`'s setting for the twin's holding of streamed writes (bytes; unset or 0: nothing is held). */
export const TWIN_STREAM_HOLD_ENV = 'TWIN_STREAM_HOLD_BYTES';
/** The largest hold the twin models: the stream probe's largest write, so `admin verify` can still see it pass. */
export const MAX_TWIN_STREAM_HOLD_BYTES = 256 * 1024;

/** A hold size as written: unset or empty is 0 (nothing held); anything but a whole number from 0 to 256 KiB is refused. */
export function parseStreamHoldBytes(setting: string | undefined, name = TWIN_STREAM_HOLD_ENV): number {
  if (setting === undefined || setting.trim() === '') return 0;
  const bytes = /^\d{1,7}$/.test(setting.trim()) ? Number(setting.trim()) : Number.NaN;
  if (!Number.isInteger(bytes) || bytes > MAX_TWIN_STREAM_HOLD_BYTES) {
    throw new Error(
      `${name} must be a whole number of bytes from 0 to ${MAX_TWIN_STREAM_HOLD_BYTES} (e.g. ${LAMBDA_STREAM_HOLD_BYTES}, the ` +
        `largest hold reported), got ${JSON.stringify(setting)}`,
    );
  }
  return bytes;
}

/**
 * Lambda does not tell a streaming function that its caller left: "streamed responses are not interrupted or stopped
 * when the invoking client connection is broken. Customers will be billed for the full function duration"
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html). So by default the twin does
 * not either: the function's writes go nowhere until it ends. `TWIN_STREAM_CALLER_GONE=1` (tests: the
 * `streamCallerGone` option) tells it, the function's response stream being destroyed, as the twin did before; no
 * deployment behaves so.
 */
export const TWIN_STREAM_CALLER_GONE_ENV = 'TWIN_STREAM_CALLER_GONE';

/** The caller-gone switch as written: unset, empty or `0` is off (as Lambda), `1` on; anything else is refused. */
export function parseStreamCallerGone(setting: string | undefined, name = TWIN_STREAM_CALLER_GONE_ENV): boolean {
  const text = setting?.trim() ?? '';
  if (text === '' || text === '0') return false;
  if (text === '1') return true;
  throw new Error(
    `${name} must be 1 (tell a streaming function that its caller left) or 0 (as Lambda: never), got ${JSON.stringify(setting)}`,
  );
}

type PreludeTarget = Writable & { setPrelude?(prelude: Prelude): void };

/**
 * The response stream a streaming handler writes to, as Lambda is reported to pass it on (when the twin is told to
 * hold): bytes go on to `target` (toward the client) only once `holdBytes` of them wait, or at the end. Where the
 * holding happens is not known, so the twin takes the stricter reading: API Gateway's idle timeout sees no held byte,
 * and a response cut short loses them.
 */
export class HeldResponseStream extends Writable {
  private held: Buffer[] = [];
  private heldBytes = 0;

  constructor(
    private readonly target: PreludeTarget,
    private readonly holdBytes: number,
  ) {
    super();
    target.once('close', () => this.destroy());
    target.on('error', (error) => this.destroy(error));
  }

  setPrelude(prelude: Prelude): void {
    this.target.setPrelude?.(prelude);
  }

  private release(): Buffer {
    const bytes = Buffer.concat(this.held);
    this.held = [];
    this.heldBytes = 0;
    return bytes;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.held.push(chunk);
    this.heldBytes += chunk.byteLength;
    if (this.heldBytes < this.holdBytes) return callback();
    this.target.write(this.release(), (error) => callback(error));
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.heldBytes > 0) this.target.write(this.release());
    this.target.end(() => callback());
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.held = [];
    this.target.destroy(error ?? undefined);
    callback(error);
  }
}

export function installLambdaStreamingGlobals(): void {
  // Other libraries (Powertools' invoke store) may have created `awslambda` already: add to it.
  const globals = globalThis as { awslambda?: Record<string, unknown> };
  const awslambda = (globals.awslambda ??= {});
  awslambda.streamifyResponse ??= <T extends (...args: never[]) => unknown>(handler: T): T => {
    Object.defineProperty(handler, STREAMING, { value: true });
    return handler;
  };
  awslambda.HttpResponseStream ??= {
    from(stream: PreludeTarget, prelude: Prelude): Writable {
      // The twin's streams (to an HTTP response, or from a function's worker thread) take the prelude.
      stream.setPrelude?.(prelude);
      return stream;
    },
  };
}

export function isStreamingHandler(handler: unknown): boolean {
  return Boolean((handler as Record<symbol, unknown>)[STREAMING]);
}
