import { describe, expect, it } from 'vitest';
import { callerText, findIllFormedText, KEY_NOT_WELL_FORMED, NOT_WELL_FORMED, wellFormedJson } from '#shared/caller-text.ts';
import { toFieldIssues } from '#shared/http/field-issues.ts';
import { jsonObjectSchema } from '#shared/json-object.ts';
import * as z from '#shared/zod.ts';

/** Caller text as JSON.parse makes it from the escapes a body may hold: `"\ud800"` is a lone surrogate, not a character. */
const LONE_HIGH = JSON.parse('"a\\ud800b"') as string;
const LONE_LOW = JSON.parse('"\\udc00"') as string;
const PAIR = JSON.parse('"\\ud83d\\ude00"') as string;

const issues = (schema: z.ZodMiniType, value: unknown) => {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : toFieldIssues(parsed.error);
};

describe('callerText', () => {
  it('takes any well-formed text, emoji (a surrogate pair) and NUL included', () => {
    expect(issues(callerText(), `x${PAIR}\u0000é`)).toEqual([]);
  });

  it.each([
    ['a lone high surrogate', LONE_HIGH],
    ['a lone low surrogate', LONE_LOW],
    ['a pair in the wrong order', '\udc00\ud800'],
    ['a pair cut at the end', PAIR.slice(0, 1)],
  ])('refuses %s', (_, text) => {
    expect(issues(callerText(), text)).toEqual([{ field: 'body', message: NOT_WELL_FORMED }]);
  });

  it("keeps the field's own checks before its own", () => {
    expect(issues(callerText(z.maxLength(2)), `${LONE_HIGH}`)).toEqual([
      { field: 'body', message: expect.stringContaining('Too big') },
      { field: 'body', message: NOT_WELL_FORMED },
    ]);
  });
});

describe('wellFormedJson', () => {
  const metadata = z.object({ metadata: jsonObjectSchema.check(wellFormedJson()) });

  it('takes well-formed keys and strings at any depth', () => {
    expect(issues(metadata, { metadata: { a: [1, { [PAIR]: PAIR }], b: null, c: true } })).toEqual([]);
  });

  it('names a string at any depth by its path', () => {
    expect(issues(metadata, { metadata: { a: 'ok', b: [1, { c: LONE_HIGH }] } })).toEqual([
      { field: 'metadata.b.1.c', message: NOT_WELL_FORMED },
    ]);
    expect(issues(metadata, { metadata: { top: LONE_LOW } })).toEqual([{ field: 'metadata.top', message: NOT_WELL_FORMED }]);
  });

  it('names a key with U+FFFD in place of its lone surrogate, so the answer stays well-formed JSON', () => {
    const found = issues(metadata, { metadata: { nested: { [`k${LONE_HIGH}`]: 1 } } });
    expect(found).toEqual([{ field: 'metadata.nested.ka\ufffdb', message: KEY_NOT_WELL_FORMED }]);
    expect(JSON.stringify(found)).not.toMatch(/\\ud[89a-f]/i);
  });

  it('finds one in a value nested 20,000 levels deep, without recursion', () => {
    let deep: unknown = LONE_HIGH;
    for (let i = 0; i < 20_000; i += 1) deep = [deep];
    expect(findIllFormedText({ x: deep })?.path).toHaveLength(20_001);
    expect(findIllFormedText({ x: deep })?.key).toBe(false);
  });

  it('finds none in numbers, booleans and null', () => {
    expect(findIllFormedText({ a: 1, b: [false, null, 2.5] })).toBeUndefined();
    expect(findIllFormedText('plain')).toBeUndefined();
    expect(findIllFormedText(LONE_LOW)).toEqual({ path: [], key: false });
  });
});
