import { describe, expect, it } from 'vitest';
import { matchesIfNoneMatch, weakEntityTag } from '#shared/http/entity-tag.ts';

/** Weak tags, compared weakly, as RFC 9110 requires of If-None-Match (section 13.1.2 of RFC 9110). */
describe('the entity tag of an answer', () => {
  it('is weak, and changes with any byte of the body', () => {
    const tag = weakEntityTag('{"openapi":"3.2.0"}');

    expect(tag).toMatch(/^W\/"[A-Za-z0-9_-]{27}"$/);
    expect(weakEntityTag('{"openapi":"3.2.0"}')).toBe(tag);
    expect(weakEntityTag('{"openapi":"3.2.1"}')).not.toBe(tag);
  });

  it('matches If-None-Match as a browser sends it back, weakened or not, in a list, or as *', () => {
    const tag = weakEntityTag('document');
    const strong = tag.slice(2);

    expect(matchesIfNoneMatch(tag, tag)).toBe(true);
    expect(matchesIfNoneMatch(strong, tag)).toBe(true);
    expect(matchesIfNoneMatch(`"other", ${tag}`, tag)).toBe(true);
    expect(matchesIfNoneMatch('*', tag)).toBe(true);
  });

  it('does not match another tag, an unquoted one or no header', () => {
    const tag = weakEntityTag('document');

    expect(matchesIfNoneMatch(weakEntityTag('another document'), tag)).toBe(false);
    expect(matchesIfNoneMatch(tag.slice(3, -1), tag)).toBe(false);
    expect(matchesIfNoneMatch(undefined, tag)).toBe(false);
    expect(matchesIfNoneMatch('', tag)).toBe(false);
  });
});
