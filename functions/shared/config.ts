/**
 * Configuration comes from the environment only, read once at cold start.
 * A missing setting throws at once: there are no silent defaults in production code paths.
 */
export function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value.trim() === '') {
    throw new Error(`Missing required environment variable ${name}`);
  }
  return value;
}

export function optionalFlag(name: string): boolean {
  return process.env[name] === '1' || process.env[name] === 'true';
}

/**
 * A duration setting that tests may shorten (a heartbeat, a stream's length); unset, it is `defaultMs`, the
 * value AWS runs with. It can never be set longer than that.
 */
export function shortenedMilliseconds(name: string, defaultMs: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return defaultMs;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > defaultMs) {
    throw new Error(`${name} must be a whole number of milliseconds from 1 to ${defaultMs}`);
  }
  return value;
}
