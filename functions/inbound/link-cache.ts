import type { LinkView } from './link-model.ts';

/**
 * Bound links by token hash, each for at most `ttlMs` and never past its token's own deadline (an old token after
 * a reissue). Only bound links are kept: an issued link is about to change, a revoked one answers 404 from its read.
 */
export function createLinkCache(ttlMs: number, maxEntries: number) {
  const entries = new Map<string, { view: LinkView; freshUntilMs: number }>();
  return {
    get(tokenHash: string, nowMs: number): LinkView | undefined {
      const entry = entries.get(tokenHash);
      if (!entry) return undefined;
      if (entry.freshUntilMs > nowMs) return entry.view;
      entries.delete(tokenHash);
      return undefined;
    },
    set(tokenHash: string, view: LinkView, nowMs: number, tokenValidUntilMs?: number): void {
      if (view.state !== 'bound') return;
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
      // Re-inserted, so the map's order stays oldest first.
      entries.delete(tokenHash);
      entries.set(tokenHash, { view, freshUntilMs: Math.min(nowMs + ttlMs, tokenValidUntilMs ?? Number.POSITIVE_INFINITY) });
    },
  };
}

export type LinkCache = ReturnType<typeof createLinkCache>;
