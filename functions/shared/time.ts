/**
 * Time in one place. In code, instants are epoch milliseconds (`…Ms`). Stored numbers say their unit in their
 * name (`…_ms`); `…_at` fields are ISO 8601 strings, as in both APIs' bodies (`created_at`, `finished_at`),
 * except the TTL attribute `expires_at`, which DynamoDB reads as epoch seconds. A deadline beside a TTL says
 * `_iso` (`expires_at_iso`, `previous_valid_until_iso`) so it is never mistaken for one.
 */
export const SECOND_MS = 1000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** The `expires_at` TTL value for an instant: epoch seconds, rounded up so an item lives at least that long. */
export function ttlSeconds(epochMs: number): number {
  return Math.ceil(epochMs / SECOND_MS);
}

/** Whole epoch seconds at or before an instant (signature timestamps, comparisons with TTL values). */
export function epochSeconds(epochMs: number): number {
  return Math.floor(epochMs / SECOND_MS);
}

/** A duration in whole seconds, at least 1 (Retry-After). */
export function wholeSecondsAtLeastOne(durationMs: number): number {
  return Math.max(1, Math.ceil(durationMs / SECOND_MS));
}
