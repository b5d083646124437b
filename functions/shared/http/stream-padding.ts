import { STREAM_FLUSH_PADDING_MAX_BYTES } from '../limits.ts';

/**
 * The deployment's streamed-write padding: how many bytes of filler follow a write that must reach the client now
 * (limits.ts, STREAM_FLUSH_PADDING_MAX_BYTES). CDK sets it on every streaming route's function from
 * `-c streamFlushPaddingBytes=N`; `npm start` passes the same variable on. 0 (the default) sends no filler at all.
 */
export const STREAM_FLUSH_PADDING_ENV = 'STREAM_FLUSH_PADDING_BYTES';

/**
 * A padding setting as written (an environment variable, a CDK context value: `-c name=N` arrives as a string):
 * unset is 0; anything but a whole number from 0 to STREAM_FLUSH_PADDING_MAX_BYTES is refused, naming `name`.
 */
export function parseStreamFlushPadding(setting: unknown, name: string): number {
  if (setting === undefined || setting === null) return 0;
  const text = typeof setting === 'number' ? String(setting) : typeof setting === 'string' ? setting.trim() : undefined;
  if (text === '') return 0;
  const bytes = text !== undefined && /^\d{1,7}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(bytes) || bytes > STREAM_FLUSH_PADDING_MAX_BYTES) {
    throw new Error(`${name} must be a whole number of bytes from 0 to ${STREAM_FLUSH_PADDING_MAX_BYTES}, got ${JSON.stringify(setting)}`);
  }
  return bytes;
}

/** A streaming function's padding, read once at cold start: a bad value fails the cold start, naming the variable. */
export function streamFlushPaddingFromEnv(): number {
  return parseStreamFlushPadding(process.env[STREAM_FLUSH_PADDING_ENV], STREAM_FLUSH_PADDING_ENV);
}
