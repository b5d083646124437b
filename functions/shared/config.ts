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
