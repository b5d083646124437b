export interface CacheBounds<Key, Value> {
  maxEntries: number;
  /** With `weigh`: the most the entries may weigh together (bytes, say); a value heavier than this alone is not kept. */
  maxWeight?: number;
  weigh?: (value: Value) => number;
  /** Hears each entry pushed out, for values also held elsewhere (a compiler's own cache) that must go there too. */
  evicted?: (key: Key, value: Value) => void;
}

/**
 * A cache holding at most `maxEntries` (and `maxWeight`), the least recently used going first. A warm execution
 * environment lives for hours and may meet any number of keys (publications, expressions, schemas): a plain map
 * would keep every one of them.
 */
export function boundedCache<Key, Value>(bounds: CacheBounds<Key, Value>) {
  const entries = new Map<Key, { value: Value; weight: number }>();
  let weight = 0;
  const remove = (key: Key, entry: { value: Value; weight: number }) => {
    entries.delete(key);
    weight -= entry.weight;
  };
  return {
    get(key: Key): Value | undefined {
      const entry = entries.get(key);
      if (!entry) return undefined;
      // Re-inserted, so the map's order stays least recently used first.
      entries.delete(key);
      entries.set(key, entry);
      return entry.value;
    },
    set(key: Key, value: Value): void {
      const old = entries.get(key);
      if (old) remove(key, old);
      const entry = { value, weight: bounds.weigh?.(value) ?? 0 };
      if (bounds.maxWeight !== undefined && entry.weight > bounds.maxWeight) return;
      entries.set(key, entry);
      weight += entry.weight;
      for (const [oldKey, oldEntry] of entries) {
        if (entries.size <= bounds.maxEntries && (bounds.maxWeight === undefined || weight <= bounds.maxWeight)) break;
        remove(oldKey, oldEntry);
        bounds.evicted?.(oldKey, oldEntry.value);
      }
    },
    get size(): number {
      return entries.size;
    },
  };
}
