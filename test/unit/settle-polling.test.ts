import { describe, expect, it } from 'vitest';
import { createSettleTimes, pollPauses } from '#executions/settle-polling.ts';
import { EXECUTE_POLL_FIRST_MS, EXECUTE_POLL_MAX_MS, EXECUTE_POLL_MIN_MS } from '#shared/limits.ts';

const take = (next: () => number, count: number) => Array.from({ length: count }, next);

/** How many reads a wait makes for an execution that settles `settleMs` after the wait begins (each read taking no time). */
function readsUntil(settleMs: number, expectedMs?: number): number {
  const next = pollPauses(expectedMs);
  let at = 0;
  let reads = 0;
  do {
    at += next();
    reads += 1;
  } while (at < settleMs);
  return reads;
}

describe('pollPauses', () => {
  it('without recent runs: the first read after EXECUTE_POLL_FIRST_MS, each pause half as long again, at most a second', () => {
    const pauses = take(pollPauses(), 16);
    expect(pauses.slice(0, 6)).toEqual([EXECUTE_POLL_FIRST_MS, 15, 23, 35, 53, 80]);
    expect(pauses.at(-1)).toBe(EXECUTE_POLL_MAX_MS);
    expect(Math.max(...pauses)).toBe(EXECUTE_POLL_MAX_MS);
  });

  it('with recent runs: the first read when they settled, then short pauses growing from an eighth of it', () => {
    expect(take(pollPauses(15), 5)).toEqual([15, EXECUTE_POLL_MIN_MS, 3, 5, 8]);
    expect(take(pollPauses(400), 4)).toEqual([400, 50, 75, 113]);
  });

  it('bounds the first read: never sooner than EXECUTE_POLL_MIN_MS, never later than a second', () => {
    expect(take(pollPauses(0), 3)).toEqual([EXECUTE_POLL_MIN_MS, EXECUTE_POLL_MIN_MS, 3]);
    expect(take(pollPauses(-5), 1)).toEqual([EXECUTE_POLL_MIN_MS]);
    expect(take(pollPauses(60_000), 3)).toEqual([EXECUTE_POLL_MAX_MS, 125, 188]);
  });

  it('answers an execution like the recent ones in one read, a little slower one in a few, and a long one at a read a second', () => {
    expect(readsUntil(15, 15)).toBe(1);
    expect(readsUntil(20, 15)).toBeLessThanOrEqual(4);
    // Slower than expected by half, and faster than expected: still few reads.
    expect(readsUntil(22, 15)).toBeLessThanOrEqual(5);
    expect(readsUntil(5, 15)).toBe(1);
    // A ten-minute run: about one read a second once the pauses have grown, whatever was expected.
    for (const expected of [undefined, 15, 2_000]) expect(readsUntil(600_000, expected)).toBeLessThanOrEqual(600 + 20);
  });
});

describe('createSettleTimes', () => {
  /** Waits for a run of `workflow` that settles after `ms`; answers what the wait expected. */
  function run(times: ReturnType<typeof createSettleTimes>, workflow: string, ms: number) {
    const wait = times.waitFor(workflow);
    wait.settled(ms);
    return wait.expectedMs;
  }

  it('expects nothing until a workflow has settled three times, then the lower median of its recent runs', () => {
    const times = createSettleTimes();
    expect(run(times, 'p/a', 400)).toBeUndefined();
    expect(run(times, 'p/a', 20)).toBeUndefined();
    expect(run(times, 'p/a', 18)).toBeUndefined();
    // 400 was the step function's cold start: one slow run does not time the next wait.
    expect(run(times, 'p/a', 16)).toBe(20);
    expect(run(times, 'p/a', 17)).toBe(18);
  });

  it('keeps each workflow apart, and only its most recent runs', () => {
    const times = createSettleTimes({ executions: 3, workflows: 10 });
    for (const ms of [900, 900, 900]) run(times, 'p/slow', ms);
    for (const ms of [10, 12, 14]) run(times, 'p/quick', ms);
    expect(run(times, 'p/slow', 900)).toBe(900);
    expect(run(times, 'p/quick', 12)).toBe(12);
    // The quick workflow got slower: after three slow runs the earlier ones no longer count.
    for (const ms of [300, 300, 300]) run(times, 'p/quick', ms);
    expect(run(times, 'p/quick', 300)).toBe(300);
  });

  it('has nothing to expect for a workflow it has not seen, and forgets the least recently used workflows first', () => {
    const times = createSettleTimes({ executions: 8, workflows: 2 });
    expect(times.waitFor('p/unknown').expectedMs).toBeUndefined();
    for (const workflow of ['p/a', 'p/b']) for (let i = 0; i < 3; i++) run(times, workflow, 10);
    run(times, 'p/c', 10);
    // p/a was the least recently used of three workflows in a map of two.
    expect(run(times, 'p/a', 10)).toBeUndefined();
  });

  it('counts a negative time (clocks apart) as zero', () => {
    const times = createSettleTimes();
    for (let i = 0; i < 3; i++) run(times, 'p/a', -3);
    expect(run(times, 'p/a', 5)).toBe(0);
  });
});
