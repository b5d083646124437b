import type { LinkView } from './link-model.ts';

/**
 * Bound links by token hash, each for at most `ttlMs` and never past its token's own deadline (an old token after
 * a reissue). Only bound links are kept: an issued link is about to change, a revoked one answers 404 from its read.
 * Halfway through an entry's life one request is told to read the token again beside its other reads (`refreshDue`),
 * so a busy link is read about twice a second and never waits for a read of its own.
 */
export function createLinkCache(ttlMs: number, maxEntries: number) {
  const entries = new Map<string, { view: LinkView; freshUntilMs: number; refreshAtMs: number }>();
  return {
    get(tokenHash: string, nowMs: number): { view: LinkView; refreshDue: boolean } | undefined {
      const entry = entries.get(tokenHash);
      if (!entry) return undefined;
      if (entry.freshUntilMs <= nowMs) {
        entries.delete(tokenHash);
        return undefined;
      }
      const refreshDue = entry.refreshAtMs <= nowMs;
      // One refresh at a time: the others go on with the entry until the refresh sets it again, or it ends.
      if (refreshDue) entry.refreshAtMs = Number.POSITIVE_INFINITY;
      return { view: entry.view, refreshDue };
    },
    /** Drops a token a refresh found no longer opening its link: the next request reads it the long way. */
    forget(tokenHash: string): void {
      entries.delete(tokenHash);
    },
    set(tokenHash: string, view: LinkView, nowMs: number, tokenValidUntilMs?: number): void {
      if (view.state !== 'bound') return;
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
      // Re-inserted, so the map's order stays oldest first.
      entries.delete(tokenHash);
      entries.set(tokenHash, {
        view,
        freshUntilMs: Math.min(nowMs + ttlMs, tokenValidUntilMs ?? Number.POSITIVE_INFINITY),
        refreshAtMs: nowMs + ttlMs / 2,
      });
    },
  };
}

export type LinkCache = ReturnType<typeof createLinkCache>;
