/**
 * A well-behaved client of both APIs, as their OpenAPI documents ask callers to be: a 429, a 5xx, a 408 or a dropped connection is
 * sent again, the same request (same external_id, same Idempotency-Key), after `Retry-After` seconds (a short pause when
 * the answer names none), up to MAX_ATTEMPTS times. Every answer, refusals included, goes into the ledger, where the
 * invariants look for what must never be answered.
 */

/** One answer as the ledger keeps it: enough to judge its shape, never the whole body of a success. */
export interface Answer {
  label: string;
  status: number;
  retryAfter: string | undefined;
  contentType: string | undefined;
  /** The body of a refusal (status >= 400), for its shape; empty for successes. */
  refusalBody: string;
  ms: number;
  /** The request's path, to follow one execution through the ledger. */
  path: string;
}

export interface Ledger {
  answers: Answer[];
  /** Requests given up after REQUEST_TIMEOUT_MS without an answer: the API never answered them (a finding). */
  unanswered: { label: string; url: string }[];
  /** Requests sent again after a refusal or a dropped connection. */
  retries: number;
  /** Connections that failed without an answer (reset, refused, cut). */
  dropped: number;
}

const newLedger = (): Ledger => ({ answers: [], unanswered: [], retries: 0, dropped: 0 });

/** Enough to outlast a burst of injected faults at the rates the chaos suite uses (each try fails with p ≤ 0.2). */
const MAX_ATTEMPTS = 10;
/**
 * Without Retry-After (a dropped connection), the client waits this long, doubling: the growing delays the webhook API's
 * OpenAPI document asks for.
 */
const FIRST_PAUSE_MS = 100;
const MAX_PAUSE_MS = 2_000;
/** A Retry-After is honoured up to this long; the product sends 1 s, the link's rate limit up to a minute. */
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * A request still unanswered after this long is given up (and sent again): API Gateway ends every response within 15
 * minutes, the blocking execute's included, and an execution the faults slow down still settles within a few. Longer than any
 * answer the mix should wait for, so a request that hits it is reported as never answered.
 */
const REQUEST_TIMEOUT_MS = 5 * 60_000;

const RETRIED_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

interface Sent {
  status: number;
  headers: Headers;
  text: string;
  /** How many times the request went out: after a lost answer, what the last one says may be the first one's doing. */
  attempts: number;
}

export interface RetryingClient {
  ledger: Ledger;
  /** Sends the request until it is answered with a status not worth retrying, or attempts run out (then the last answer). */
  send(label: string, url: string, init: RequestInit): Promise<Sent | undefined>;
  /** One answer, recorded, with no retry (a stream's first answer is read by its caller). */
  record(label: string, url: string, status: number, headers: Headers, text: string, startedAt: number): void;
  sleep(ms: number): Promise<void>;
  /** Waits as the answer asks before the next attempt. */
  pauseAfter(headers: Headers | undefined, attempt: number): Promise<void>;
  /** The request waiting longest for its answer, if any (progress lines name it). */
  oldestInFlight(): { label: string; url: string; forMs: number } | undefined;
  /** Runs a request, tracked as in flight, given up after REQUEST_TIMEOUT_MS. */
  tracked<T>(label: string, url: string, request: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

export interface ClientOptions {
  onAnswer?: (answer: Answer) => void;
  /** Only the suite's own defect checks shorten it, to see a request that is never answered without waiting minutes. */
  requestTimeoutMs?: number;
}

export function retryingClient(options: ClientOptions = {}): RetryingClient {
  const { onAnswer, requestTimeoutMs = REQUEST_TIMEOUT_MS } = options;
  const ledger = newLedger();
  const inFlight = new Set<{ label: string; url: string; since: number }>();
  const tracked = async <T>(label: string, url: string, request: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    const entry = { label, url, since: Date.now() };
    inFlight.add(entry);
    // A controller and a timer of our own: Node 20 may collect AbortSignal.timeout()'s signal before it fires.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), requestTimeoutMs);
    try {
      return await request(deadline.signal);
    } catch (error) {
      if (deadline.signal.aborted) ledger.unanswered.push({ label, url });
      throw error;
    } finally {
      clearTimeout(timer);
      inFlight.delete(entry);
    }
  };
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const record = (label: string, url: string, status: number, headers: Headers, text: string, startedAt: number) => {
    const answer: Answer = {
      label,
      status,
      retryAfter: headers.get('retry-after') ?? undefined,
      contentType: headers.get('content-type') ?? undefined,
      refusalBody: status >= 400 ? text.slice(0, 20_000) : '',
      ms: performance.now() - startedAt,
      path: new URL(url).pathname,
    };
    ledger.answers.push(answer);
    onAnswer?.(answer);
  };
  const pauseAfter = async (headers: Headers | undefined, attempt: number) => {
    const seconds = Number(headers?.get('retry-after'));
    const pause =
      Number.isFinite(seconds) && seconds > 0
        ? Math.min(seconds * 1000, MAX_RETRY_AFTER_MS)
        : Math.min(FIRST_PAUSE_MS * 2 ** attempt, MAX_PAUSE_MS);
    await sleep(pause);
  };
  return {
    ledger,
    record,
    sleep,
    pauseAfter,
    tracked,
    oldestInFlight() {
      let oldest: { label: string; url: string; since: number } | undefined;
      for (const entry of inFlight) if (!oldest || entry.since < oldest.since) oldest = entry;
      return oldest && { label: oldest.label, url: oldest.url, forMs: Date.now() - oldest.since };
    },
    async send(label, url, init) {
      let last: Sent | undefined;
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        if (attempt > 0) ledger.retries += 1;
        const startedAt = performance.now();
        try {
          const { response, text } = await tracked(label, url, async (signal) => {
            const response = await fetch(url, { ...init, signal });
            return { response, text: await response.text() };
          });
          record(label, url, response.status, response.headers, text, startedAt);
          last = { status: response.status, headers: response.headers, text, attempts: attempt + 1 };
          if (!RETRIED_STATUSES.has(response.status)) return last;
          await pauseAfter(response.headers, attempt);
        } catch {
          ledger.dropped += 1;
          await pauseAfter(undefined, attempt);
        }
      }
      return last && { ...last, attempts: MAX_ATTEMPTS };
    },
  };
}
