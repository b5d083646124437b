import {
  EXECUTE_POLL_FIRST_MS,
  EXECUTE_POLL_GROWTH,
  EXECUTE_POLL_HISTORY_EXECUTIONS,
  EXECUTE_POLL_HISTORY_WORKFLOWS,
  EXECUTE_POLL_MAX_MS,
  EXECUTE_POLL_MIN_MS,
} from '#shared/limits.ts';

/** With fewer executions to go by, one slow one (the step function's cold start) would time the next wait on its own. */
const MIN_EXECUTIONS_TO_TIME = 3;
/**
 * After a read timed from recent executions, the pauses start at this share of it: an execution a little slower than
 * usual costs a read or two more, not a wait as long again.
 */
const FOLLOW_UP_SHARE = 1 / 8;

const bounded = (ms: number) => Math.min(EXECUTE_POLL_MAX_MS, Math.max(EXECUTE_POLL_MIN_MS, Math.ceil(ms)));

/**
 * The pauses before each status read of one wait, one per call. Without an expectation the first is
 * EXECUTE_POLL_FIRST_MS; with one (when recent executions of the workflow settled), the first read comes then. Each
 * later pause is EXECUTE_POLL_GROWTH times the one before, never over EXECUTE_POLL_MAX_MS.
 */
export function pollPauses(expectedMs?: number): () => number {
  let reads = 0;
  let pause = 0;
  return () => {
    reads += 1;
    if (reads === 1) pause = expectedMs === undefined ? EXECUTE_POLL_FIRST_MS : bounded(expectedMs);
    else if (reads === 2 && expectedMs !== undefined) pause = bounded(pause * FOLLOW_UP_SHARE);
    else pause = bounded(pause * EXECUTE_POLL_GROWTH);
    return pause;
  };
}

/** How long executions of each workflow took to settle, as one function instance saw them while waiting. */
export interface SettleTimes {
  /**
   * The wait of an execution of `workflowKey`: when its executions usually settle (unknown before a few), and where to
   * note how long this one took.
   */
  waitFor(workflowKey: string): { expectedMs?: number; settled(afterMs: number): void };
}

/** Bounded: a function instance may see many workflows; the one it used least recently goes first. */
export function createSettleTimes(
  limits = { executions: EXECUTE_POLL_HISTORY_EXECUTIONS, workflows: EXECUTE_POLL_HISTORY_WORKFLOWS },
): SettleTimes {
  const recent = new Map<string, number[]>();
  return {
    waitFor(workflowKey) {
      const durations = recent.get(workflowKey) ?? [];
      return {
        expectedMs: durations.length >= MIN_EXECUTIONS_TO_TIME ? lowerMedian(durations) : undefined,
        settled(afterMs) {
          const latest = recent.get(workflowKey) ?? [];
          recent.delete(workflowKey);
          recent.set(workflowKey, [...latest, Math.max(0, afterMs)].slice(-limits.executions));
          if (recent.size > limits.workflows) recent.delete(recent.keys().next().value!);
        },
      };
    },
  };
}

function lowerMedian(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}
