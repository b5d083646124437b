import * as z from './zod.ts';

/**
 * Caller JSON objects with every own key kept. JSON.parse makes `__proto__` an ordinary own key, but zod's
 * `record` drops it silently, so fields whose keys matter (metadata, overrides) are taken as parsed and their
 * entries read with `Object.entries`, never looked up on the object by a caller's name.
 */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const jsonObjectSchema = z.custom<Record<string, unknown>>(isJsonObject, { message: 'must be a JSON object' });

/** How deep `value` nests objects and arrays, counted without recursion (a hostile value may nest thousands deep): past `limit`, true. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth + 1 > limit) return true;
    for (const child of Object.values(current)) pending.push([child, depth + 1]);
  }
  return false;
}
