import { StatesError } from './states-error.ts';

/** setTimeout's ceiling; longer sleeps are chained. */
const MAX_TIMER_MS = 2_147_000_000;

/** Resolves at a timestamp (a Wait or a retry's backoff, which may last longer than a timer can); rejects when aborted. */
export function sleepUntil(atMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new StatesError('States.Aborted', 'aborted'));
    let timer: NodeJS.Timeout;
    const arm = () => {
      const left = atMs - Date.now();
      if (left <= 0) {
        signal.removeEventListener('abort', onAbort);
        resolve();
        return;
      }
      timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
    };
    const onAbort = () => {
      clearTimeout(timer);
      reject(new StatesError('States.Aborted', 'aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    arm();
  });
}
