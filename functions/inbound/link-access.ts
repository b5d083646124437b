import { NotFoundError, ServiceUnavailableError } from '#shared/errors.ts';
import type { CounterStore } from '#shared/counter-store.ts';
import { RATE_LIMITS, rateWindow, takeUnit } from '#shared/rate-limits.ts';
import { hashSecret } from '#shared/secrets.ts';
import { LINK_TOKEN_PATTERN, type Link } from './link-model.ts';
import { tokenValidUntilMs, type LinksRepository } from './links-repository.ts';

export interface LinkAccessDeps {
  links: LinksRepository;
  counters: CounterStore;
  countersTable: string;
  now: () => number;
}

const UNKNOWN_LINK = 'Unknown webhook link';

/**
 * Finds the link a request's token names, enforcing token-guessing protection per client IP and the
 * per-link request rate (every request counts, whatever it turns out to be). Answers issued and bound
 * links; unknown, revoked and expired-after-reissue tokens are 404.
 */
export async function resolveLink(deps: LinkAccessDeps, token: string, clientIp: string): Promise<Link> {
  const nowMs = deps.now();
  const guessing = RATE_LIMITS.unknownTokensPerIp;
  const guessWindow = rateWindow(guessing, clientIp, nowMs);
  const guardKey = guessWindow.key;

  const tokenHash = LINK_TOKEN_PATTERN.test(token) ? hashSecret(token) : undefined;
  const { token: record, guessCount } = await guarded(() =>
    tokenHash
      ? deps.links.findTokenWithGuard(tokenHash, deps.countersTable, guardKey)
      : deps.counters.read(guardKey).then((count) => ({ token: undefined, guessCount: count })),
  );
  // A blocked address learns nothing, not even that a guess was right.
  if (guessCount >= guessing.limit) throw guessWindow.refuse();

  const validUntilMs = record && tokenValidUntilMs(record);
  if (!record || (validUntilMs !== undefined && validUntilMs <= nowMs)) {
    const count = await guarded(() => deps.counters.increment(guardKey, guessWindow.expiresAtMs));
    if (count > guessing.limit) throw guessWindow.refuse();
    throw new NotFoundError(UNKNOWN_LINK);
  }

  const rate = rateWindow(RATE_LIMITS.requestsPerLinkPerMinute, record.link_id, nowMs);
  const [link, withinRate] = await Promise.all([
    deps.links.getLink(record.link_id),
    takeUnit(deps.counters, rate, RATE_LIMITS.requestsPerLinkPerMinute),
  ]);
  if (!link || link.state === 'revoked') throw new NotFoundError(UNKNOWN_LINK);
  if (!withinRate) throw rate.refuse();
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
