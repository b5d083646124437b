import { describe, expect, it } from 'vitest';
import { openStream, streamLeaseUntil, type OpenStreamsDeps } from '#published/open-streams.ts';
import type { SlotLease } from '#published/open-streams-repository.ts';
import { RateLimitedError, ServiceUnavailableError } from '#shared/errors.ts';
import { DEFAULT_MAX_OPEN_STREAMS_PER_KEY, STREAM_END_MARGIN_MS } from '#shared/limits.ts';
import { ManualClock } from '../support/fakes/clock.ts';

/**
 * Open streams as leases: a key's and the deployment's slots, each taken with a conditional write (free, or its lease
 * over) and given back as the stream ends; one that is never given back (a crashed function) is free once its lease
 * ends. The slots here are a map with the store's conditions, one await per call as each is a round trip.
 */
class Slots {
  readonly items = new Map<string, SlotLease>();
  takes = 0;
  /** Runs before a take writes: a stream that got there first, meanwhile. */
  beforeTake?: (scope: string, lease: SlotLease) => void;

  async liveLeases(scope: string, nowMs: number): Promise<SlotLease[]> {
    await Promise.resolve();
    return [...this.items]
      .filter(([key, lease]) => key.startsWith(`${scope}/`) && lease.untilMs > nowMs)
      .map(([, lease]) => ({ ...lease }));
  }

  async take(scope: string, lease: SlotLease, nowMs: number): Promise<boolean> {
    this.takes += 1;
    await Promise.resolve();
    this.beforeTake?.(scope, lease);
    const held = this.items.get(`${scope}/${lease.slot}`);
    if (held && held.untilMs > nowMs) return false;
    this.items.set(`${scope}/${lease.slot}`, { ...lease });
    return true;
  }

  async give(scope: string, lease: SlotLease): Promise<void> {
    await Promise.resolve();
    if (this.items.get(`${scope}/${lease.slot}`)?.leaseId === lease.leaseId) this.items.delete(`${scope}/${lease.slot}`);
  }

  held(scope: string, nowMs: number): number {
    return [...this.items].filter(([key, lease]) => key.startsWith(`${scope}/`) && lease.untilMs > nowMs).length;
  }
}

function world(deploymentLimit = 10) {
  const slots = new Slots();
  const clock = new ManualClock();
  const deps: OpenStreamsDeps = { slots, now: clock.now, deploymentLimit };
  return { slots, clock, deps };
}

const caller = (keyId: string, maxOpenStreams?: number) => ({ projectId: 'p', keyId, maxOpenStreams });
const refusalOf = (work: Promise<unknown>) =>
  work.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('open streams', () => {
  it("hold a slot of the key's and one of the deployment's until they close", async () => {
    const { slots, clock, deps } = world();
    const stream = await openStream(deps, caller('k1', 2), clock.now() + 60_000);
    expect(slots.held('key#k1', clock.now())).toBe(1);
    expect(slots.held('deployment', clock.now())).toBe(1);

    await stream.close();
    expect(slots.items.size).toBe(0);
  });

  it("refuse the key's next stream with 429, Retry-After at the end of the first lease to end, and a detail", async () => {
    const { clock, deps } = world();
    await openStream(deps, caller('k1', 3), clock.now() + 90_000);
    await openStream(deps, caller('k1', 3), clock.now() + 30_500);
    await openStream(deps, caller('k1', 3), clock.now() + 60_000);

    const refusal = await refusalOf(openStream(deps, caller('k1', 3), clock.now() + 60_000));
    expect(refusal).toBeInstanceOf(RateLimitedError);
    expect((refusal as RateLimitedError).statusCode).toBe(429);
    expect((refusal as RateLimitedError).retryAfterSeconds).toBe(31);
    expect((refusal as Error).message).toBe(
      'This key has 3 streams open, its limit (max_open_streams 3); one of them ends within 31 s at the latest (sooner when its ' +
        'reader is done): retry then, or close a stream nobody reads',
    );
    // Another key is served.
    await expect(openStream(deps, caller('k2', 3), clock.now() + 60_000)).resolves.toBeDefined();
  });

  it('take the default limit for a key that names none', async () => {
    const { clock, deps } = world(1_000);
    for (let i = 0; i < DEFAULT_MAX_OPEN_STREAMS_PER_KEY; i++) await openStream(deps, caller('k1'), clock.now() + 60_000);
    await expect(openStream(deps, caller('k1'), clock.now() + 60_000)).rejects.toBeInstanceOf(RateLimitedError);
  });

  it('free the slot of a stream never closed (its function crashed) once its lease ends, with no one cleaning up', async () => {
    const { clock, deps } = world();
    await openStream(deps, caller('k1', 1), clock.now() + 10_000);
    await expect(openStream(deps, caller('k1', 1), clock.now() + 10_000)).rejects.toBeInstanceOf(RateLimitedError);

    clock.advance(10_000);
    await expect(openStream(deps, caller('k1', 1), clock.now() + 10_000)).resolves.toBeDefined();
  });

  it('give the key its slot back when the deployment refuses, naming the deployment', async () => {
    const { slots, clock, deps } = world(2);
    await openStream(deps, caller('k1', 5), clock.now() + 60_000);
    await openStream(deps, caller('k2', 5), clock.now() + 60_000);

    const refusal = await refusalOf(openStream(deps, caller('k3', 5), clock.now() + 60_000));
    expect((refusal as Error).message).toMatch(/^The API has 2 streams open, as many as this deployment serves at once; /);
    expect(slots.held('key#k3', clock.now())).toBe(0);
  });

  it('let exactly one of two streams opening at once have the last slot', async () => {
    const { slots, clock, deps } = world();
    const both = await Promise.allSettled([
      openStream(deps, caller('k1', 1), clock.now() + 60_000),
      openStream(deps, caller('k1', 1), clock.now() + 60_000),
    ]);
    expect(both.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((both.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(RateLimitedError);
    expect(slots.held('key#k1', clock.now())).toBe(1);
  });

  it('answer 503 when streams opening at the same moment keep taking the free slots first', async () => {
    const { slots, clock, deps } = world();
    let other = 0;
    // Before each of our writes, another stream takes that very slot.
    slots.beforeTake = (scope, lease) =>
      void slots.items.set(`${scope}/${lease.slot}`, { slot: lease.slot, leaseId: `other${other++}`, untilMs: clock.now() + 60_000 });
    const refusal = await refusalOf(openStream(deps, caller('k1', 100), clock.now() + 60_000));
    expect(refusal).toBeInstanceOf(ServiceUnavailableError);
    expect(slots.takes).toBe(9);
  });

  it("last no longer than the stream's window and the margin of its end, nor than its invocation", () => {
    expect(streamLeaseUntil(1_000, 900_000, 300_000)).toBe(1_000 + 300_000 + STREAM_END_MARGIN_MS);
    expect(streamLeaseUntil(1_000, 20_000)).toBe(21_000);
    expect(streamLeaseUntil(1_000, 100_000, 300_000)).toBe(101_000);
  });
});
