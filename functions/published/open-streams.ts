import type { Caller } from '#shared/access.ts';
import { RateLimitedError, ServiceUnavailableError } from '#shared/errors.ts';
import { logger } from '#shared/lambda/powertools.ts';
import { DEFAULT_MAX_OPEN_STREAMS_PER_KEY, OPEN_STREAM_SLOT_ROUNDS, OPEN_STREAM_SLOT_TRIES, STREAM_END_MARGIN_MS } from '#shared/limits.ts';
import { newId } from '#shared/secrets.ts';
import { SECOND_MS } from '#shared/time.ts';
import type { OpenStreamsRepository, SlotLease } from './open-streams-repository.ts';

/**
 * How many streams are open at once, per key and for the whole deployment (functions/published/README.md, Open
 * streams). A stream holds a slot of its key and one of the deployment from before it opens until its invocation
 * ends; the slots are leases that end on their own at the latest moment the invocation can end, so a stream whose
 * function crashed, or whose caller left (Lambda serves it on to the end of its window), holds its slots no longer.
 */
export interface OpenStreamsDeps {
  slots: Pick<OpenStreamsRepository, 'liveLeases' | 'take' | 'give'>;
  now: () => number;
  /** Streams the deployment serves at once, all keys together (MAX_OPEN_STREAMS). */
  deploymentLimit: number;
  /** Which free slots to try first: random, so that streams opening together seldom reach for the same one. */
  random?: () => number;
}

export interface OpenStream {
  /** Gives the stream's slots back; never throws (a slot not given back is free again when its lease ends). */
  close(): Promise<void>;
}

const DEPLOYMENT_SCOPE = 'deployment';

/**
 * The latest a stream opened at `nowMs` can hold its slots: its window and the margin of its end (limits.ts), or its
 * invocation's own deadline, whichever comes first: Lambda stops the invocation there, crashed or not.
 */
export function streamLeaseUntil(nowMs: number, remainingMs: number, windowMs = Number.POSITIVE_INFINITY): number {
  return nowMs + Math.min(remainingMs, windowMs + STREAM_END_MARGIN_MS);
}

/**
 * Takes a slot of the caller's key and one of the deployment until `untilMs` (the latest the stream's invocation can
 * end), or refuses: 429 with `Retry-After` when either has none free, 503 when streams opening at the same moment
 * kept taking the free ones first.
 */
export async function openStream(deps: OpenStreamsDeps, caller: Caller, untilMs: number): Promise<OpenStream> {
  if (!caller.keyId) throw new Error('An open stream belongs to a key: the caller has none');
  const keyScope = `key#${caller.keyId}`;
  const keyLimit = caller.maxOpenStreams ?? DEFAULT_MAX_OPEN_STREAMS_PER_KEY;
  const keyLease = await takeSlot(deps, keyScope, keyLimit, untilMs, (open, within) =>
    refusal(`This key has ${streams(open)} open, its limit (max_open_streams ${keyLimit})`, within),
  );
  let deploymentLease: SlotLease;
  try {
    deploymentLease = await takeSlot(deps, DEPLOYMENT_SCOPE, deps.deploymentLimit, untilMs, (open, within) =>
      refusal(`The API has ${streams(open)} open, as many as this deployment serves at once`, within),
    );
  } catch (error) {
    await give(deps, keyScope, keyLease);
    throw error;
  }
  return {
    close: async () => {
      await Promise.all([give(deps, keyScope, keyLease), give(deps, DEPLOYMENT_SCOPE, deploymentLease)]);
    },
  };
}

const streams = (count: number) => `${count} ${count === 1 ? 'stream' : 'streams'}`;

/** The refusal of a stream whose scope is full; `withinMs`: when the first of its open streams ends at the latest. */
function refusal(what: string, withinMs: number): RateLimitedError {
  const seconds = Math.max(1, Math.ceil(withinMs / SECOND_MS));
  return new RateLimitedError(
    `${what}; one of them ends within ${seconds} s at the latest (sooner when its reader is done): retry then, or close a ` +
      'stream nobody reads',
    withinMs,
  );
}

async function takeSlot(
  deps: OpenStreamsDeps,
  scope: string,
  limit: number,
  untilMs: number,
  full: (open: number, withinMs: number) => Error,
): Promise<SlotLease> {
  const leaseId = newId('');
  for (let round = 0; round < OPEN_STREAM_SLOT_ROUNDS; round++) {
    const now = deps.now();
    const live = await deps.slots.liveLeases(scope, now);
    if (live.length >= limit) throw full(live.length, Math.min(...live.map((lease) => lease.untilMs)) - now);
    const held = new Set(live.map((lease) => lease.slot));
    const free: number[] = [];
    for (let slot = 0; slot < limit; slot++) if (!held.has(slot)) free.push(slot);
    for (const slot of pick(free, OPEN_STREAM_SLOT_TRIES, deps.random ?? Math.random)) {
      const lease = { slot, leaseId, untilMs };
      if (await deps.slots.take(scope, lease, now)) return lease;
    }
  }
  throw new ServiceUnavailableError('Many streams are opening at this moment; retry');
}

/** Up to `count` of `items`, drawn at random (a partial Fisher-Yates shuffle). */
function pick<T>(items: T[], count: number, random: () => number): T[] {
  const drawn = items.slice();
  const taken = Math.min(count, drawn.length);
  for (let index = 0; index < taken; index++) {
    const other = index + Math.floor(random() * (drawn.length - index));
    [drawn[index], drawn[other]] = [drawn[other]!, drawn[index]!];
  }
  return drawn.slice(0, taken);
}

async function give(deps: OpenStreamsDeps, scope: string, lease: SlotLease): Promise<void> {
  try {
    await deps.slots.give(scope, lease);
  } catch (error) {
    // Its lease ends by itself at `untilMs`: the slot is only held that much longer.
    logger.warn('an open stream could not give its slot back; it is free again when its lease ends', {
      scope,
      slot: lease.slot,
      untilMs: lease.untilMs,
      error: (error as Error).name,
    });
  }
}
