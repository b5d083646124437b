import type { CounterStore } from './store/counter-store.ts';
import { RateLimitedError } from './errors.ts';
import {
  MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK,
  MAX_REQUESTS_PER_MINUTE_PER_KEY,
  MAX_REQUESTS_PER_MINUTE_PER_LINK,
  MAX_UNKNOWN_TOKENS_PER_IP,
  UNKNOWN_TOKEN_WINDOW_MS,
} from './limits.ts';
import { DAY_MS, MINUTE_MS } from './time.ts';

/**
 * Every rate limit of the product: its value, window and refusal. The per-key and per-IP ones are a counter per
 * subject per window in the counters table (`<prefix>#<subject>#<window>`, one conditional UpdateItem per request);
 * a link's two are counted together in its day item in the usage table (functions/inbound/link-limits.ts). The
 * fifth, API Gateway's stage throttle (`STAGE_THROTTLE`), is a backstop in front of them all.
 */
export interface RateLimit {
  readonly prefix: string;
  readonly limit: number;
  /** A fixed window of this many ms, or the UTC calendar day. */
  readonly window: number | 'utcDay';
  /** How long a finished window's counter is kept after the window ends (it can still answer a late reader). */
  readonly keepMs: number;
  readonly refusal: string;
}

export const RATE_LIMITS = {
  /** Every request to a link counts, whatever it turns out to be (functions/inbound/README.md#webhook-behaviour-beyond-the-brief). */
  requestsPerLinkPerMinute: {
    prefix: 'rate',
    limit: MAX_REQUESTS_PER_MINUTE_PER_LINK,
    window: MINUTE_MS,
    keepMs: 0,
    refusal: 'Request rate limit of this link exceeded',
  },
  /** Accepted events per link per UTC day, as the webhook API's OpenAPI document states; a duplicate gives its unit back. */
  acceptedEventsPerLinkPerDay: {
    prefix: 'quota',
    limit: MAX_ACCEPTED_EVENTS_PER_DAY_PER_LINK,
    window: 'utcDay',
    keepMs: DAY_MS,
    refusal: 'Daily limit of accepted events for this link reached',
  },
  /** Token guessing: unknown tokens per client IP; a blocked address gets 429 for the rest of the window. */
  unknownTokensPerIp: {
    prefix: 'guess',
    limit: MAX_UNKNOWN_TOKENS_PER_IP,
    window: UNKNOWN_TOKEN_WINDOW_MS,
    keepMs: 0,
    refusal: 'Too many requests with unknown links from this address',
  },
  /** Requests per API key per minute, as the Workflow API's OpenAPI document states. */
  requestsPerKeyPerMinute: {
    prefix: 'key-rate',
    limit: MAX_REQUESTS_PER_MINUTE_PER_KEY,
    window: MINUTE_MS,
    keepMs: 0,
    refusal: `Rate limit of ${MAX_REQUESTS_PER_MINUTE_PER_KEY} requests per minute exceeded`,
  },
} as const satisfies Record<string, RateLimit>;

/** API Gateway's stage-wide throttle (requests per second, burst), in front of the limits above. */
export const STAGE_THROTTLE = { rateLimit: 200, burstLimit: 400 } as const;

/** The window of `limit` that contains `nowMs`, for one subject (a link, an IP address, a key). */
export interface RateWindow {
  readonly key: string;
  readonly endMs: number;
  /** When the counter item may go (its TTL). */
  readonly expiresAtMs: number;
  /** The 429 for this window, with Retry-After until it ends. */
  refuse(): RateLimitedError;
}

export function rateWindow(limit: RateLimit, subject: string, nowMs: number): RateWindow {
  const { id, endMs } = windowAt(limit.window, nowMs);
  return {
    key: `${limit.prefix}#${subject}#${id}`,
    endMs,
    expiresAtMs: endMs + limit.keepMs,
    refuse: () => new RateLimitedError(limit.refusal, endMs - nowMs),
  };
}

/** Takes one unit of the window: true, or false when the limit is reached (the caller decides what a refusal means). */
function takeUnit(counters: CounterStore, window: RateWindow, limit: RateLimit): Promise<boolean> {
  return counters.incrementBelow(window.key, limit.limit, window.expiresAtMs);
}

/** Takes one unit of the window, or refuses the request with 429 and Retry-After. */
export async function takeUnitOrRefuse(counters: CounterStore, limit: RateLimit, subject: string, nowMs: number): Promise<RateWindow> {
  const window = rateWindow(limit, subject, nowMs);
  if (!(await takeUnit(counters, window, limit))) throw window.refuse();
  return window;
}

function windowAt(window: number | 'utcDay', nowMs: number): { id: string; endMs: number } {
  if (window === 'utcDay') {
    const day = new Date(nowMs).toISOString().slice(0, 10);
    return { id: day, endMs: Date.parse(`${day}T00:00:00Z`) + DAY_MS };
  }
  const start = Math.floor(nowMs / window) * window;
  return { id: String(start / window), endMs: start + window };
}
