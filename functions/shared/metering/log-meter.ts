import { AsyncLocalStorage } from 'node:async_hooks';
import type { Metering } from './cost-meter.ts';

/**
 * What an invocation costs in CloudWatch Logs: on Lambda, everything a function writes to stdout and stderr is
 * ingested into its log group (billed per GB), with Lambda's own lines for each invocation. The meter counts the
 * bytes of every write as it happens, into the invocation it belongs to (AsyncLocalStorage: on the local server, one
 * process serves concurrent requests of a function, and each request's lines stay its own).
 *
 * Lines written between two invocations of an instance are the previous invocation's closing lines, after its usage
 * was recorded (the metrics records Powertools publishes as the invocation ends, an error logged by the HTTP stack,
 * a failed usage write), or an initialization's (a cold start): they go to the next invocation the instance runs.
 * Lambda runs one invocation at a time per instance, so each invocation pays for the closing lines of the one before,
 * which for the same function are the same lines within a few bytes; only the last invocation's closing lines before
 * an instance is retired are not counted.
 */

/**
 * Lambda's own lines per invocation, in bytes: `START RequestId: <36> Version: $LATEST` (71 with its newline),
 * `END RequestId: <36>` (52), `REPORT RequestId: <36>` with Duration, Billed Duration, Memory Size and Max Memory Used
 * (about 141), and the X-Ray line the active tracing adds (about 93). A cold start's INIT_START line and Init Duration
 * (about 150 more) are not counted.
 */
export const LAMBDA_PLATFORM_LOG_BYTES = 71 + 52 + 141 + 93;

/**
 * API Gateway's access log line for one request (lib/cdk/constructs/api.ts ACCESS_LOG_FORMAT), in bytes with its
 * newline, at most: the format's 14 fields with the longest route's resource path, a 7-digit response length, 5-digit
 * latencies and an error message. Ingested into the access log group whatever the function logs;
 * test/infra/access-log.test.ts holds it to the format.
 */
export const ACCESS_LOG_LINE_BYTES = 460;

/**
 * The webhook API's HTTP API access log line (lib/cdk/constructs/webhook-api.ts WEBHOOK_ACCESS_LOG_FORMAT), in bytes
 * with its newline, at most; test/infra/access-log.test.ts holds it to the format.
 */
export const WEBHOOK_ACCESS_LOG_LINE_BYTES = 240;

/**
 * One meter per process, whatever the number of copies of this module (two bundles in one process, a test runner's
 * module isolation): each copy wrapping stdout again would count every byte once per copy, each into its own store.
 */
interface LogMeterState {
  storage: AsyncLocalStorage<Metering>;
  /** Bytes written outside any invocation's window since the last one started: the closing lines of the one before. */
  betweenInvocations: number;
}
const STATE_KEY = Symbol.for('workflow-ingest.log-meter');
const meterState = (): LogMeterState => ((globalThis as Record<symbol, LogMeterState | undefined>)[STATE_KEY] ??= installed());

/** Wraps `write` of stdout and stderr, once per process, so every writer (Powertools' Console, console.*) is counted. */
function installed(): LogMeterState {
  const created: LogMeterState = { storage: new AsyncLocalStorage<Metering>(), betweenInvocations: 0 };
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = function meteredWrite(chunk: string | Uint8Array, ...rest: unknown[]): boolean {
      count(created, chunk, typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : undefined);
      return write(chunk, ...rest);
    };
  }
  return created;
}

function count(into: LogMeterState, chunk: string | Uint8Array, encoding: BufferEncoding | undefined): void {
  const bytes = typeof chunk === 'string' ? Buffer.byteLength(chunk, encoding ?? 'utf8') : chunk.byteLength;
  const metering = into.storage.getStore();
  if (metering) metering.units.logBytes += bytes;
  else into.betweenInvocations += bytes;
}

/**
 * Runs `work` (the invocation's handler, inside its metering) counting its log bytes into `metering.units.logBytes`,
 * which starts with Lambda's own lines for the invocation (unless `platformLines` is false: a function whose system
 * log level is WARN, lib/cdk/constructs/handler-function.ts) and the closing lines of the invocation before.
 */
export function meterLogs<T>(metering: Metering, work: () => Promise<T>, platformLines = true): Promise<T> {
  const state = meterState();
  metering.units.logBytes += (platformLines ? LAMBDA_PLATFORM_LOG_BYTES : 0) + state.betweenInvocations;
  state.betweenInvocations = 0;
  return state.storage.run(metering, work);
}
