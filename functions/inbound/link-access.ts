import { NotFoundError, RateLimitedError, ServiceUnavailableError } from '#shared/errors.ts';
import { fixedWindow, type CounterStore } from '#shared/counter-store.ts';
import {
  MAX_REQUESTS_PER_MINUTE_PER_LINK,
  MAX_UNKNOWN_TOKENS_PER_IP,
  UNKNOWN_TOKEN_WINDOW_MS,
} from '#shared/limits.ts';
import { hashSecret } from '#shared/secrets.ts';
import { LINK_TOKEN_PATTERN, type Link } from './link-model.ts';
import type { LinksRepository } from './links-repository.ts';

export interface LinkAccessDeps {
  links: LinksRepository;
  counters: CounterStore;
  countersTable: string;
  now: () => number;
}

const UNKNOWN_LINK = 'Unknown webhook link';
const MINUTE_MS = 60_000;

/**
 * Finds the link a request's token names, enforcing token-guessing protection per client IP and the
 * per-link request rate (every request counts, whatever it turns out to be). Answers issued and bound
 * links; unknown, revoked and expired-after-reissue tokens are 404.
 */
export async function resolveLink(deps: LinkAccessDeps, token: string, clientIp: string): Promise<Link> {
  const nowMs = deps.now();
  const guessWindow = fixedWindow(nowMs, UNKNOWN_TOKEN_WINDOW_MS);
  const guardKey = `guess#${clientIp}#${guessWindow.id}`;
  const guessingBlocked = () =>
    new RateLimitedError('Too many requests with unknown links from this address', guessWindow.endMs - nowMs);

  const tokenHash = LINK_TOKEN_PATTERN.test(token) ? hashSecret(token) : undefined;
  const { token: record, guessCount } = await guarded(() =>
    tokenHash
      ? deps.links.findTokenWithGuard(tokenHash, deps.countersTable, guardKey)
      : deps.counters.read(guardKey).then((count) => ({ token: undefined, guessCount: count })),
  );
  // A blocked address learns nothing, not even that a guess was right.
  if (guessCount >= MAX_UNKNOWN_TOKENS_PER_IP) throw guessingBlocked();

  if (!record || (record.valid_until !== undefined && record.valid_until <= nowMs)) {
    const count = await guarded(() => deps.counters.increment(guardKey, guessWindow.endMs));
    if (count > MAX_UNKNOWN_TOKENS_PER_IP) throw guessingBlocked();
    throw new NotFoundError(UNKNOWN_LINK);
  }

  const rateWindow = fixedWindow(nowMs, MINUTE_MS);
  const [link, withinRate] = await Promise.all([
    deps.links.getLink(record.link_id),
    deps.counters.incrementBelow(`rate#${record.link_id}#${rateWindow.id}`, MAX_REQUESTS_PER_MINUTE_PER_LINK, rateWindow.endMs),
  ]);
  if (!link || link.state === 'revoked') throw new NotFoundError(UNKNOWN_LINK);
  if (!withinRate) throw new RateLimitedError('Request rate limit of this link exceeded', rateWindow.endMs - nowMs);
  return link;
}

/**
 * The guessing protection fails closed: when the guard counter cannot be read (or a guess cannot be counted),
 * the request is refused with 503 before anything about the token is revealed, for valid and unknown tokens
 * alike. Never 404 or 200 on an unread count, which would let a throttled table switch the protection off.
 */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ServiceUnavailableError) throw error;
    const unavailable = new ServiceUnavailableError('Token checks are unavailable; retry later');
    unavailable.cause = error;
    throw unavailable;
  }
}
