import { BatchIncompleteError } from '../errors.ts';
import { BATCH_MAX_ATTEMPTS, BATCH_RETRY_BASE_MS, BATCH_RETRY_MAX_DELAY_MS } from '../limits.ts';

/**
 * How batch requests are sent again. Defaults from limits.ts; tests pass their own `sleep` and `random`.
 */
export interface BatchRetryOptions {
  maxAttempts?: number;
  baseMs?: number;
  maxDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
  /** A number in [0, 1), as Math.random. */
  random?: () => number;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * "Full jitter": a pause drawn uniformly from [0, min(cap, base × 2^retry)). Spreads the retries of many
 * throttled callers over the window instead of sending them again all at once.
 */
export function fullJitterDelay(retry: number, options: BatchRetryOptions = {}): number {
  const ceiling = Math.min(options.maxDelayMs ?? BATCH_RETRY_MAX_DELAY_MS, (options.baseMs ?? BATCH_RETRY_BASE_MS) * 2 ** retry);
  return Math.floor((options.random ?? Math.random)() * ceiling);
}

/**
 * Sends `request`, then whatever each answer leaves over, pausing between attempts, until nothing is left.
 * `send` answers the leftover request and its size, or undefined when everything was processed.
 * Throws BatchIncompleteError (503) when something is still left after the last attempt: never ignores it.
 */
export async function sendUntilProcessed<Request>(
  operation: BatchIncompleteError['operation'],
  request: Request,
  send: (request: Request) => Promise<{ rest: Request; count: number } | undefined>,
  options: BatchRetryOptions = {},
): Promise<void> {
  const maxAttempts = options.maxAttempts ?? BATCH_MAX_ATTEMPTS;
  const sleep = options.sleep ?? realSleep;
  let pending = request;
  for (let attempt = 1; ; attempt += 1) {
    const leftover = await send(pending);
    if (!leftover || leftover.count === 0) return;
    if (attempt >= maxAttempts) throw new BatchIncompleteError(operation, leftover.count, attempt);
    await sleep(fullJitterDelay(attempt - 1, options));
    pending = leftover.rest;
  }
}
