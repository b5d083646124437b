import { DAY_MS, HOUR_MS } from './time.ts';

/*
 * When the nightly collection runs: one time zone for the schedule (CDK), its deadline check, the sweep's id (the
 * functions) and the twin's timer. Europe/Moscow keeps UTC+3 all year (no daylight saving), so a fixed offset gives
 * the same midnight as the zone's rules; a zone with daylight saving would need those rules here too.
 */

/** The IANA zone of the schedules (EventBridge Scheduler's `ScheduleExpressionTimezone`). */
export const COLLECTION_TIME_ZONE = 'Europe/Moscow';
/** That zone's offset from UTC, all year. */
const COLLECTION_UTC_OFFSET_MS = 3 * HOUR_MS;
/** The sweeps start at this hour of the zone's day... */
export const NIGHTLY_START_HOUR = 0;
/** ...and those not finished by this hour are counted late (`NightlySweepsLate`). */
export const NIGHTLY_DEADLINE_HOUR = 4;

/** The zone's calendar date at `nowMs` (`YYYY-MM-DD`): the night a sweep belongs to. */
export function collectionDate(nowMs: number): string {
  return new Date(nowMs + COLLECTION_UTC_OFFSET_MS).toISOString().slice(0, 10);
}

/** The next start of the nightly sweeps after `nowMs`, in epoch ms. */
export function nextNightlyStart(nowMs: number): number {
  const startOffsetMs = COLLECTION_UTC_OFFSET_MS - NIGHTLY_START_HOUR * HOUR_MS;
  return Math.floor((nowMs + startOffsetMs) / DAY_MS) * DAY_MS + DAY_MS - startOffsetMs;
}
