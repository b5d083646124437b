import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '#shared/json-object.ts';

describe('how deep a JSON value nests', () => {
  const arrays = (levels: number): unknown => JSON.parse('['.repeat(levels) + ']'.repeat(levels));

  it('counts objects and arrays alike, scalars not at all', () => {
    expect(nestsDeeperThan('text', 0)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan({ a: [1, { b: null }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [1, { b: null }] }, 2)).toBe(true);
    expect(nestsDeeperThan(arrays(64), 64)).toBe(false);
    expect(nestsDeeperThan(arrays(65), 64)).toBe(true);
  });

  it('measures a value nested 200,000 levels deep without overflowing the stack', () => {
    expect(nestsDeeperThan(arrays(200_000), 64)).toBe(true);
  });
});
