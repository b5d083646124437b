import { describe, expect, it } from 'vitest';
import { secretMasker, SECRET_MARK } from '#engine/tools/secret-masking.ts';

/** The masking of tool answers, on its own: every form a secret can come back in, and the cut that follows it. */
const SECRET = 'p"ss\\w0rd/x';
const CONTROL = 'a\u0001b\nc\td"e';
const UNICODE = 'clé/😀 ok';
const mask = secretMasker([SECRET, CONTROL, UNICODE]);
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const b64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const hex4 = (unit: number) => unit.toString(16).padStart(4, '0');
/** Every character as `\uXXXX` (surrogates one by one), `case` choosing the hex digits' case. */
const allUnicodeEscaped = (text: string, upper: boolean) =>
  [...Array(text.length).keys()].map((i) => `\\u${upper ? hex4(text.charCodeAt(i)).toUpperCase() : hex4(text.charCodeAt(i))}`).join('');

describe('masking a secret in text', () => {
  const cases: [string, (secret: string) => string][] = [
    ['as it is', (s) => s],
    ['JSON-escaped (JSON.stringify)', (s) => JSON.stringify(s).slice(1, -1)],
    ['JSON-escaped with \\/', (s) => JSON.stringify(s).slice(1, -1).replaceAll('/', '\\/')],
    ['JSON-escaped as \\uXXXX, lower-case hex', (s) => allUnicodeEscaped(s, false)],
    ['JSON-escaped as \\uXXXX, upper-case hex', (s) => allUnicodeEscaped(s, true)],
    [
      'JSON-escaped, ASCII only (ensure_ascii)',
      (s) =>
        JSON.stringify(s)
          .slice(1, -1)
          .replace(/[^\x20-\x7e]/g, (c) => `\\u${hex4(c.charCodeAt(0))}`),
    ],
    [
      'JSON-escaped, control characters as \\u00XX rather than \\n or \\t',
      (s) => JSON.stringify(s).slice(1, -1).replace(/\\n/g, '\\u000A').replace(/\\t/g, '\\u0009'),
    ],
    ['encodeURIComponent', (s) => encodeURIComponent(s)],
    ['encodeURIComponent, lower-case hex', (s) => encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())],
    ['form-encoded (URLSearchParams, + for a space)', (s) => new URLSearchParams({ k: s }).toString().slice(2)],
    ['encodeURI (keeps /)', (s) => encodeURI(s)],
    ['base64', (s) => b64(s)],
    ['base64 without padding', (s) => b64(s).replace(/=+$/, '')],
    ['base64url', (s) => b64url(s)],
    ['base64url with padding', (s) => b64url(s).padEnd(b64(s).length, '=')],
  ];

  for (const [name, encode] of cases) {
    it(`masks it ${name}`, () => {
      for (const secret of [SECRET, CONTROL, UNICODE]) {
        const form = encode(secret);
        expect(mask.text(`before ${form} after`), `${JSON.stringify(secret)} as ${JSON.stringify(form)}`).toBe(
          `before ${SECRET_MARK} after`,
        );
      }
    });
  }

  it('masks a secret put into a URL query as the URL parser leaves it (some characters encoded, some not)', () => {
    // The parser drops tabs and newlines, which no masking can put back: CONTROL is left out.
    for (const secret of [SECRET, UNICODE]) expect(mask.text(new URL(`http://h/?k=${secret}`).search)).toBe(`?k=${SECRET_MARK}`);
  });

  it('masks the form-encoded space as + and the escaped quote of the brief', () => {
    expect(secretMasker(['a b']).text('q=a+b&r=a%20b')).toBe(`q=${SECRET_MARK}&r=${SECRET_MARK}`);
    expect(mask.text('{"key": "p\\"ss\\\\w0rd\\/x"}')).toBe(`{"key": "${SECRET_MARK}"}`);
  });

  it('masks the part of a longer base64 text that holds the secret, at any of the three alignments', () => {
    for (const prefix of ['', 'u', 'us', 'user:']) {
      const encoded = b64(`${prefix}${SECRET}--`);
      const masked = mask.text(`Basic ${encoded}`);
      expect(masked, prefix).toContain(SECRET_MARK);
      // What is left around the mark is at most the characters shared with the text around the secret.
      expect(masked.replace(`Basic `, '').replace(SECRET_MARK, '').length, prefix).toBeLessThanOrEqual(encoded.length - 12);
      for (const form of [encoded, b64url(`${prefix}${SECRET}--`)]) expect(mask.text(form)).not.toBe(form);
    }
  });

  it('undoes only what really is an escape', () => {
    const abc = secretMasker(['xAy', 'p+q']);
    // An escaped backslash followed by u0041 is a backslash and "u0041", not an A.
    for (const text of ['x\\\\u0041y', 'x%4y', 'x%ZZy', 'x%C3y', 'p q', 'p%20q']) expect(abc.text(text), text).toBe(text);
    for (const text of ['x\\u0041y', 'x%41y', '%78%41%79', 'p%2Bq', 'p+q']) expect(abc.text(text), text).toBe(SECRET_MARK);
    expect(abc.text('x%C3%41y')).toBe('x%C3%41y');
  });

  it('leaves text without a secret as it is, and needs no secrets at all', () => {
    const text = 'p"ss\\w0rd no, cGFzcw== no, %22 no';
    expect(mask.text(text)).toBe(text);
    expect(secretMasker([]).text(text)).toBe(text);
    expect(secretMasker(['']).text(text)).toBe(text);
  });

  it('makes one mark of overlapping secrets and overlapping occurrences, leaving no piece of either', () => {
    const two = secretMasker(['abcdef', 'defghi']);
    expect(two.text('xx abcdefghi yy')).toBe(`xx ${SECRET_MARK} yy`);
    expect(secretMasker(['aba']).text('ababa!')).toBe(`${SECRET_MARK}!`);
    expect(two.text('abcdef abcdef')).toBe(`${SECRET_MARK} ${SECRET_MARK}`);
    expect(two.text('abcdefabcdef')).toBe(SECRET_MARK);
  });

  it('walks a run of a secret repeated at its own period in one pass, and a long near miss of it', () => {
    // A search restarting at every position would compare the whole secret there: 64 K positions of 4 K units each.
    const xs = secretMasker(['x'.repeat(4096)]);
    expect(xs.text(`a${'x'.repeat(65536)}b`)).toBe(`a${SECRET_MARK}b`);
    expect(secretMasker([`${'x'.repeat(4095)}y`]).text('x'.repeat(65536))).toBe('x'.repeat(65536));
    expect(secretMasker(['abab']).text('zababababz abab')).toBe(`z${SECRET_MARK}z ${SECRET_MARK}`);
  });

  it('leaves a long near miss of an escaped form alone', () => {
    const secret = 'a\\'.repeat(2000);
    const slashes = secretMasker([secret]);
    for (const nearMiss of [JSON.stringify(secret).slice(1, -3), encodeURIComponent(secret).slice(0, -1)])
      expect(slashes.text(nearMiss)).toBe(nearMiss);
    expect(slashes.text(JSON.stringify(secret).slice(1, -1))).toBe(SECRET_MARK);
  });
});

describe('masking and cutting', () => {
  it('masks a secret that starts before the end whole, and drops everything after the end', () => {
    const text = `0123456789${SECRET}tail`;
    expect(mask.text(text, 12)).toBe(`0123456789${SECRET_MARK}`);
    expect(mask.text(text, 10)).toBe('0123456789');
    expect(mask.text(text, 8)).toBe('01234567');
  });

  it('drops the start of a secret whose end was never read, when the end is one longest form short of the text', () => {
    const read = `${'x'.repeat(100)}${SECRET}${'y'.repeat(10)}${SECRET.slice(0, 6)}`;
    const masked = mask.text(read, read.length - mask.longest);
    expect(masked).not.toContain(SECRET.slice(0, 4));
    expect(masked.startsWith('x'.repeat(read.length - mask.longest))).toBe(true);
  });

  it('counts as longest the longest form any of its secrets can take', () => {
    expect(secretMasker([]).longest).toBe(0);
    const single = secretMasker(['ab']);
    for (const form of ['\\u0061\\u0062', '%61%62', 'YWI=']) expect(single.text(form)).toBe(SECRET_MARK);
    expect(single.longest).toBeGreaterThanOrEqual('\\u0061\\u0062'.length);
    expect(secretMasker(['é']).longest).toBeGreaterThanOrEqual('%C3%A9'.length);
  });
});

describe('masking a parsed JSON value', () => {
  it('masks every string at any depth, object keys included, and leaves the rest of the value alone', () => {
    const value = {
      [SECRET]: 1,
      list: [{ deep: [`x ${SECRET} y`, 7, null, true] }],
      inner: JSON.stringify({ key: SECRET }),
      b: b64(SECRET),
      n: 3,
    };
    expect(mask.value(value)).toEqual({
      [SECRET_MARK]: 1,
      list: [{ deep: [`x ${SECRET_MARK} y`, 7, null, true] }],
      inner: `{"key":"${SECRET_MARK}"}`,
      b: SECRET_MARK,
      n: 3,
    });
    expect(value[SECRET]).toBe(1);
  });

  it('keeps a key named __proto__ a key', () => {
    const masked = mask.value(JSON.parse(`{"__proto__": {"polluted": "${b64(SECRET)}"}}`)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(masked)).toBe(Object.prototype);
    expect(Object.hasOwn(masked, '__proto__')).toBe(true);
    expect(JSON.stringify(masked)).toBe(`{"__proto__":{"polluted":"${SECRET_MARK}"}}`);
  });

  it('masks a value nested 100,000 levels deep without overflowing the stack', () => {
    const depth = 100_000;
    const masked = mask.value(JSON.parse(`${'['.repeat(depth)}"${SECRET.replace(/["\\]/g, '\\$&')}"${']'.repeat(depth)}`));
    let inner: unknown = masked;
    for (let i = 0; i < depth; i += 1) inner = (inner as unknown[])[0];
    expect(inner).toBe(SECRET_MARK);
  });
});
