import { describe, expect, it } from 'vitest';
import { collectionDate, nextNightlyStart } from '#shared/collection-night.ts';

describe("the collection's night", () => {
  it('starts at 00:00 Moscow time (21:00 UTC), the next one after any moment, itself included', () => {
    expect(new Date(nextNightlyStart(Date.parse('2026-05-01T12:00:00Z'))).toISOString()).toBe('2026-05-01T21:00:00.000Z');
    expect(new Date(nextNightlyStart(Date.parse('2026-05-01T21:00:00Z'))).toISOString()).toBe('2026-05-02T21:00:00.000Z');
    expect(new Date(nextNightlyStart(Date.parse('2026-05-01T20:59:59.999Z'))).toISOString()).toBe('2026-05-01T21:00:00.000Z');
  });

  it('belongs to the Moscow date, which turns at 21:00 UTC', () => {
    expect(collectionDate(Date.parse('2026-05-01T20:59:59Z'))).toBe('2026-05-01');
    expect(collectionDate(Date.parse('2026-05-01T21:00:00Z'))).toBe('2026-05-02');
    // The deadline check at 04:00 names the same night as the start at 00:00.
    expect(collectionDate(Date.parse('2026-05-02T01:00:00Z'))).toBe('2026-05-02');
  });
});
