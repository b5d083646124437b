import { existsSync, statSync } from 'node:fs';
import type { TrafficRecord, TrafficSetup } from './traffic-record.ts';

/**
 * Collection sweeps while the traffic runs and after it. Each sweep is recorded as a window: the announcements its
 * sources got while it ran (the file's bytes from its start to its end) are its own, so the invariants can tell a
 * conversation announced twice by one sweep (a repeat after a fault, which the product allows) from one handed off by
 * two sweeps, or by none.
 */
export interface CollectionTarget {
  /** Runs a sweep of the task now (the admin CLI's `collect`) and resolves once its execution ended. */
  collect(taskId: string): Promise<unknown>;
  /**
   * Fires the nightly trigger (its Step Functions starts may be throttled) and resolves once every sweep it started
   * ended. Only a twin in this process has it; every round of sweeps fires it first when there: the first time it
   * sweeps, after that it is the same night fired again, which must hand nothing off twice.
   */
  nightly?(): Promise<unknown>;
}

/** A sweep still going after this long is left to finish on its own, and its task is swept no more. */
const SWEEP_WAIT_MS = 10 * 60_000;

const bytesOf = (file: string) => (existsSync(file) ? statSync(file).size : 0);

export function sweeper(target: CollectionTarget, setup: TrafficSetup, record: TrafficRecord) {
  const abandoned = new Set<string>();

  async function window<T>(how: 'nightly' | 'manual', sourceIds: string[], sweep: () => Promise<T>): Promise<boolean> {
    const startedAt = Date.now();
    const fromByte = bytesOf(setup.announcementsFile);
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<'gave up'>((resolve) => (timer = setTimeout(() => resolve('gave up'), SWEEP_WAIT_MS)));
    // A sweep that fails (its state machine's retries spent) leaves its events to the next one.
    const outcome = await Promise.race([sweep().catch(() => undefined), gaveUp]);
    clearTimeout(timer);
    const ended = outcome !== 'gave up';
    // A sweep left running may still announce: its window stays open to the end.
    record.sweeps.push({
      how,
      sourceIds,
      fromByte,
      toByte: ended ? bytesOf(setup.announcementsFile) : Number.MAX_SAFE_INTEGER,
      startedAt,
      endedAt: ended ? Date.now() : Number.MAX_SAFE_INTEGER,
    });
    record.collections += 1;
    return ended;
  }

  return {
    /** The nightly trigger when there is one, then a sweep of every link's task by the CLI. */
    async round(): Promise<void> {
      const sources = setup.links.map((link) => link.sourceId);
      if (target.nightly && abandoned.size === 0 && !(await window('nightly', sources, () => target.nightly!())))
        for (const link of setup.links) abandoned.add(link.taskId);
      await Promise.all(
        setup.links
          .filter((link) => !abandoned.has(link.taskId))
          .map(async (link) => {
            if (!(await window('manual', [link.sourceId], () => target.collect(link.taskId)))) abandoned.add(link.taskId);
          }),
      );
    },
  };
}
