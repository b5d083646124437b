import {
  STREAM_POLL_FIRST_MS,
  STREAM_POLL_GROWTH,
  STREAM_POLL_IDLE_MAX_MS,
  STREAM_POLL_IDLE_SHARE,
  STREAM_POLL_MAX_MS,
  STREAM_POLL_WAITING_IDLE_MAX_MS,
  STREAM_POLL_WAITING_MAX_MS,
} from '#shared/limits.ts';

/** What the tail knows when it decides how long to wait before its next read of the log. */
export interface TailPace {
  /** The pause before the read that just came back. */
  previousMs: number;
  /** That read found new events. */
  fresh: boolean;
  /** The execution sleeps (a wait node, an approval): nothing comes until it resumes. */
  waiting: boolean;
  /** How long the tail has found nothing new (since its last new events, or since it started). */
  silentForMs: number;
}

/**
 * The pause before the tail's next read (limits.ts, STREAM_POLL_*): short after new events, growing while nothing
 * comes up to a bound that grows with the silence, so a busy stream is seen at once and an idle one costs few reads.
 */
export function nextPollPause(pace: TailPace): number {
  if (pace.fresh) return STREAM_POLL_FIRST_MS;
  const [floor, cap] = pace.waiting
    ? [STREAM_POLL_WAITING_MAX_MS, STREAM_POLL_WAITING_IDLE_MAX_MS]
    : [STREAM_POLL_MAX_MS, STREAM_POLL_IDLE_MAX_MS];
  const bound = Math.min(cap, Math.max(floor, pace.silentForMs / STREAM_POLL_IDLE_SHARE));
  return Math.min(bound, Math.ceil(pace.previousMs * STREAM_POLL_GROWTH));
}
