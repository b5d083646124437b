import { addCostUnits, usageToCarry, type CostUnits } from '#shared/metering/cost-meter.ts';
import { NotFoundError, ServiceUnavailableError } from '#shared/errors.ts';
import type { CounterStore } from '#shared/store/counter-store.ts';
import { RATE_LIMITS, rateWindow } from '#shared/rate-limits.ts';
import { hashSecret } from '#shared/secrets.ts';
import type { LinkCache } from './link-cache.ts';
import type { LinkLimits, LinkLimitTicket } from './link-limits.ts';
import { LINK_TOKEN_PATTERN, linkView, type LinkView } from './link-model.ts';
import { tokenLinkView, tokenValidUntilMs, type LinksRepository, type TokenRecord } from './links-repository.ts';

export interface LinkAccessDeps {
  links: LinksRepository;
  counters: CounterStore;
  limits: LinkLimits;
  countersTable: string;
  cache: LinkCache;
  now: () => number;
}

/** A request's link, found by its token; nothing has been counted against it yet. */
export interface OpenedLink {
  readonly link: LinkView;
  readonly tokenHash: string;
  /**
   * Counts the request against the link's minute (and, for an event, a unit of its day) and refuses in the webhook
   * API's order of checks (functions/inbound/README.md#webhook-behaviour-beyond-the-brief): a token found gone by the
   * refresh first, then the rate. A token that opens a link is never refused for its address's guesses.
   * The same update carries the request's usage: what it spent so far and `expected`, what the caller will spend
   * on the event once it is admitted. Answers the ticket, admitted or over the day's quota.
   */
  admit(kind: 'request' | 'event', expected?: Partial<CostUnits>): Promise<AdmittedTicket>;
}

/** An admission's outcome; giving back its day unit also corrects the usage the admission carried. */
type AdmittedTicket = Omit<LinkLimitTicket, 'giveBack'> & { giveBack(): Promise<void> };

const UNKNOWN_LINK = 'Unknown webhook link';
/** The limits update writes one small item. */
const LIMITS_UPDATE_WRITE_UNITS = 1;
/** A refresh reads the token item beside the limits update: an eventually consistent read of one small item. */
const TOKEN_READ_UNITS = 0.5;
/** Giving back a day's unit updates the same small item. */
const GIVE_BACK_WRITE_UNITS = 1;

/**
 * Finds the link a request's token names: from memory when a bound link was read within the last second
 * (LINK_CACHE_MS), otherwise with one read of the token item (its copy of the link). Unknown, revoked and
 * expired-after-reissue tokens are 404; only a token that opens no link counts as a guess, and only such a token is
 * refused for its address's guesses, so senders sharing an address with a guesser are served.
 */
export async function openLink(deps: LinkAccessDeps, token: string, clientIp: string): Promise<OpenedLink> {
  const nowMs = deps.now();
  const tokenHash = LINK_TOKEN_PATTERN.test(token) ? hashSecret(token) : undefined;

  const cached = tokenHash ? deps.cache.get(tokenHash, nowMs) : undefined;
  if (cached && tokenHash) return opened(deps, cached.view, tokenHash, nowMs, cached.refreshDue);

  const record = tokenHash ? await guarded(() => deps.links.findToken(tokenHash)) : undefined;
  const validUntilMs = record && tokenValidUntilMs(record);
  if (!record || !tokenHash || (validUntilMs !== undefined && validUntilMs <= nowMs)) throw await guessRefusal(deps, clientIp, nowMs);
  // A copy that says bound or revoked is final enough; issued (or no copy, an older token item) asks the link item.
  const copy = tokenLinkView(record);
  const view = copy && copy.state !== 'issued' ? copy : await deps.links.getLink(record.link_id).then((link) => link && linkView(link));
  if (!view) throw new NotFoundError(UNKNOWN_LINK);
  deps.cache.set(tokenHash, view, nowMs, validUntilMs);
  return opened(deps, view, tokenHash, nowMs, false);
}

/**
 * The answer to a token that opens no link: 404, counted against the address, or the guessing block's 429 once the
 * address has used its guesses in the window. A blocked address's guesses write nothing: the counter is read first, so
 * a guesser that keeps going costs one read a request, billed to no one.
 */
async function guessRefusal(deps: LinkAccessDeps, clientIp: string, nowMs: number): Promise<Error> {
  const guessing = RATE_LIMITS.unknownTokensPerIp;
  const guessWindow = rateWindow(guessing, clientIp, nowMs);
  const guesses = await guarded(() => deps.counters.read(guessWindow.key));
  if (guesses >= guessing.limit) return guessWindow.refuse();
  const counted = await guarded(() => deps.counters.increment(guessWindow.key, guessWindow.expiresAtMs));
  return counted > guessing.limit ? guessWindow.refuse() : new NotFoundError(UNKNOWN_LINK);
}

function opened(deps: LinkAccessDeps, link: LinkView, tokenHash: string, nowMs: number, refresh: boolean): OpenedLink {
  return {
    link,
    tokenHash,
    async admit(kind, expected = {}) {
      // Only a bound link takes events: any other request counts against the minute alone.
      const counted = link.state === 'bound' ? kind : 'request';
      // The update itself, the token read beside it (a refresh), and the event if it is one.
      const own = { dynamoWriteUnits: LIMITS_UPDATE_WRITE_UNITS, dynamoReadUnits: refresh ? TOKEN_READ_UNITS : 0 };
      const usage =
        link.state === 'revoked' ? undefined : usageToCarry({ link: link.link_id }, addCostUnits(own, counted === kind ? expected : {}));
      const [token, limits] = await Promise.allSettled([
        refresh ? guarded(() => deps.links.findToken(tokenHash)) : Promise.resolve(undefined),
        deps.limits.take(link.link_id, counted, nowMs, usage),
      ]);
      // Nothing will be stored on a refusal: the day's unit goes back. The minute's stays: every request counts.
      const giveBackOnRefusal = async () => {
        if (limits.status === 'fulfilled' && limits.value.admission === 'admitted') await correcting(limits.value, link).giveBack();
      };
      // A refresh that could not read the token says nothing of it: 503, as for the first read.
      if (token.status === 'rejected') {
        await giveBackOnRefusal();
        throw token.reason;
      }
      if (limits.status === 'rejected') throw limits.reason;
      const ticket = correcting(limits.value, link);
      const gone = link.state === 'revoked' || (refresh && !refreshed(deps, tokenHash, token.value, nowMs));
      if (gone) {
        if (ticket.admission === 'admitted') await ticket.giveBack();
        throw new NotFoundError(UNKNOWN_LINK);
      }
      if (ticket.admission === 'rateLimited') throw ticket.minute.refuse();
      return ticket;
    },
  };
}

/**
 * The ticket whose give-back also takes back what the admission carried for an event that will not be stored (its
 * put, its count as an event), in the same update: a refused or duplicate event costs no usage write of its own.
 */
function correcting(ticket: LinkLimitTicket, link: LinkView): AdmittedTicket {
  return { ...ticket, giveBack: () => ticket.giveBack(usageToCarry({ link: link.link_id }, { dynamoWriteUnits: GIVE_BACK_WRITE_UNITS })) };
}

/**
 * Takes a token read again while its link was in memory: false when the token no longer opens a link (revoked,
 * past its deadline after a reissue, gone), else the memory keeps the new copy. A token item without a copy (an
 * older one) leaves the memory as it is, to end in its time and be read the long way.
 */
function refreshed(deps: LinkAccessDeps, tokenHash: string, record: TokenRecord | undefined, nowMs: number): boolean {
  const validUntilMs = record && tokenValidUntilMs(record);
  const copy = record && tokenLinkView(record);
  if (!record || (validUntilMs !== undefined && validUntilMs <= nowMs) || copy?.state === 'revoked') {
    deps.cache.forget(tokenHash);
    return false;
  }
  if (copy?.state === 'bound') deps.cache.set(tokenHash, copy, nowMs, validUntilMs);
  return true;
}

/**
 * The token checks fail closed: when the token cannot be read, or a guess cannot be read or counted, the request is
 * refused with 503 before anything about the token is revealed. Never 404 on an unread token or an unread count,
 * which would let a throttled table switch the guessing protection off.
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
