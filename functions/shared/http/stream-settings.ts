import {
  DEFAULT_MAX_OPEN_STREAMS,
  DEFAULT_STREAM_WINDOW_MS,
  MAX_OPEN_STREAMS_LIMIT,
  MAX_STREAM_MS,
  MIN_STREAM_WINDOW_MS,
} from '../limits.ts';
import { SECOND_MS } from '../time.ts';

/**
 * The deployment's settings of the published API's streams, set by CDK on the functions that serve them
 * (`cdk deploy -c streamWindowSeconds=N -c maxOpenStreams=N`) and by `npm start` from the same variables:
 * - the stream window: the longest one invocation serves a stream before it ends it with `resume`;
 * - the deployment's open streams: how many its functions serve at once, all keys together.
 * Unset, each is its default (limits.ts); CDK always sets both, so a deployment's values are on record.
 */
export const STREAM_WINDOW_ENV = 'STREAM_WINDOW_SECONDS';
export const MAX_OPEN_STREAMS_ENV = 'MAX_OPEN_STREAMS';

const MIN_WINDOW_SECONDS = MIN_STREAM_WINDOW_MS / SECOND_MS;
const MAX_WINDOW_SECONDS = MAX_STREAM_MS / SECOND_MS;

/** A whole number as written (an environment variable, a CDK context value: `-c name=N` arrives as a string), else undefined. */
function wholeNumber(setting: unknown): number | undefined {
  const text = typeof setting === 'number' ? String(setting) : typeof setting === 'string' ? setting.trim() : undefined;
  return text !== undefined && /^\d{1,9}$/.test(text) ? Number(text) : undefined;
}

const unset = (setting: unknown) => setting === undefined || setting === null || (typeof setting === 'string' && setting.trim() === '');

/**
 * The stream window in seconds, as written: unset is the default; anything but a whole number of seconds from a minute
 * to 14 minutes (the streaming integration and the function time out at 15) is refused, naming `name`.
 */
export function parseStreamWindowSeconds(setting: unknown, name: string): number {
  if (unset(setting)) return DEFAULT_STREAM_WINDOW_MS / SECOND_MS;
  const seconds = wholeNumber(setting);
  if (seconds === undefined || seconds < MIN_WINDOW_SECONDS || seconds > MAX_WINDOW_SECONDS) {
    throw new Error(
      `${name} must be a whole number of seconds from ${MIN_WINDOW_SECONDS} to ${MAX_WINDOW_SECONDS}, got ${JSON.stringify(setting)}`,
    );
  }
  return seconds;
}

/** The deployment's open streams, as written: unset is the default; anything but a whole number from 1 to the limit is refused. */
export function parseMaxOpenStreams(setting: unknown, name: string): number {
  if (unset(setting)) return DEFAULT_MAX_OPEN_STREAMS;
  const streams = wholeNumber(setting);
  if (streams === undefined || streams < 1 || streams > MAX_OPEN_STREAMS_LIMIT) {
    throw new Error(`${name} must be a whole number of streams from 1 to ${MAX_OPEN_STREAMS_LIMIT}, got ${JSON.stringify(setting)}`);
  }
  return streams;
}

/** The stream window of a function, read once at cold start: a bad value fails the cold start, naming the variable. */
export function streamWindowMsFromEnv(): number {
  return parseStreamWindowSeconds(process.env[STREAM_WINDOW_ENV], STREAM_WINDOW_ENV) * SECOND_MS;
}

/** The deployment's open streams, read once at cold start: a bad value fails the cold start, naming the variable. */
export function maxOpenStreamsFromEnv(): number {
  return parseMaxOpenStreams(process.env[MAX_OPEN_STREAMS_ENV], MAX_OPEN_STREAMS_ENV);
}
