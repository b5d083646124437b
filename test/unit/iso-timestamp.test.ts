import { describe, expect, it } from 'vitest';
import { isIsoWithOffset, parseIsoWithOffset } from '#inbound/iso-timestamp.ts';

/** The rule as it was written before the hand-written reader: the webhook API's date grammar, a calendar check, Date.parse. */
const ISO_WITH_OFFSET = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2}))$/;
function reference(text: string): number | undefined {
  const match = ISO_WITH_OFFSET.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second = '0', , offsetHours = '0', offsetMinutes = '0'] = match;
  const calendar = new Date(Date.UTC(+year!, +month! - 1, +day!, +hour!, +minute!, +second));
  const isRealDate =
    calendar.getUTCFullYear() === +year! &&
    calendar.getUTCMonth() === +month! - 1 &&
    calendar.getUTCDate() === +day! &&
    +hour! < 24 &&
    +minute! < 60 &&
    +second < 60 &&
    +offsetHours < 24 &&
    +offsetMinutes < 60;
  if (!isRealDate) return undefined;
  const epoch = Date.parse(text);
  return Number.isNaN(epoch) ? undefined : epoch;
}

function expectSameAsReference(texts: Iterable<string>): number {
  let accepted = 0;
  for (const text of texts) {
    const expected = reference(text);
    if (expected !== undefined) accepted += 1;
    expect({ text, valid: isIsoWithOffset(text), epoch: parseIsoWithOffset(text) }).toEqual({
      text,
      valid: expected !== undefined,
      epoch: expected,
    });
  }
  return accepted;
}

const pad = (value: number, width = 2) => String(value).padStart(width, '0');

/** Every component at and around its limits, one at a time, on a valid base. */
function* boundaries(): Generator<string> {
  const years = [0, 1, 99, 100, 999, 1000, 1900, 1970, 2000, 2024, 2026, 2100, 9999];
  const months = [0, 1, 2, 4, 9, 11, 12, 13, 99];
  const days = [0, 1, 28, 29, 30, 31, 32, 99];
  for (const year of years) for (const month of months) for (const day of days) yield `${pad(year, 4)}-${pad(month)}-${pad(day)}T10:20:30Z`;
  for (const hour of [0, 23, 24, 25, 99])
    for (const minute of [0, 59, 60, 99]) {
      yield `2026-03-01T${pad(hour)}:${pad(minute)}Z`;
      for (const second of [0, 59, 60, 61, 99]) yield `2026-03-01T${pad(hour)}:${pad(minute)}:${pad(second)}+01:00`;
    }
  for (let digits = 0; digits <= 11; digits += 1) {
    yield `2026-03-01T10:20:30.${'7'.repeat(digits)}Z`;
    yield `2026-03-01T10:20.${'7'.repeat(digits)}Z`;
  }
  for (const sign of ['+', '-', '−', ' '])
    for (const hours of [0, 1, 12, 23, 24, 99])
      for (const minutes of [0, 30, 59, 60]) {
        yield `2026-03-01T10:20:30${sign}${pad(hours)}:${pad(minutes)}`;
      }
  yield* [
    '',
    'Z',
    '2026-03-01',
    '2026-03-01T10Z',
    '2026-03-01T10:20',
    '2026-03-01T10:20:30',
    '2026-03-01t10:20:30Z',
    '2026-03-01T10:20:30z',
    '2026-03-01 10:20:30Z',
    '2026-03-01T10:20:30+0300',
    '2026-03-01T10:20:30+03',
    '2026-03-01T10:20:30+03:00Z',
    '2026-03-01T10:20:30Z\n',
    ' 2026-03-01T10:20:30Z',
    '+02026-03-01T10:20:30Z',
    '20260-03-01T10:20:30Z',
    '2026-3-01T10:20:30Z',
    '2026-03-1T10:20:30Z',
    '2026-03-01T1:20:30Z',
    '2026-03-01T10:2:30Z',
    '2026-03-01T10:20:3Z',
    '2026-03-01T10:20:30.Z',
    '2026-03-01T10:20:30,5Z',
    '２０２６-03-01T10:20:30Z',
    '2026-03-01T10:20:30+03:00:00',
    '2026-03-01T10:20:30Z ',
    '2024-02-29T00:00Z',
    '2023-02-29T00:00Z',
    '1900-02-29T00:00Z',
    '2000-02-29T00:00Z',
    '2026-03-01T10:20:30.123456789-05:30',
    '0100-01-01T00:00:00Z',
  ];
}

/** Valid timestamps with one character replaced, inserted or removed: the near misses a reader gets wrong. */
function* mutations(count: number): Generator<string> {
  const alphabet = '0123456789-:T.Z+ zt';
  let seed = 13;
  const random = (below: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % below;
  };
  const bases = ['2026-03-01T10:20:30.123Z', '2024-02-29T23:59:59+14:00', '1999-12-31T00:00-00:30', '2026-11-30T12:00:00.5+03:00'];
  for (let i = 0; i < count; i += 1) {
    const base = bases[random(bases.length)]!;
    const at = random(base.length + 1);
    const char = alphabet[random(alphabet.length)]!;
    const kind = random(3);
    yield kind === 0
      ? base.slice(0, at) + char + base.slice(at + 1)
      : kind === 1
        ? base.slice(0, at) + char + base.slice(at)
        : base.slice(0, at) + base.slice(at + 1);
  }
}

describe('ISO 8601 date-times with an offset, read by hand', () => {
  it('agrees with the regular expression, the calendar check and Date.parse at every boundary', () => {
    expect(expectSameAsReference(boundaries())).toBeGreaterThan(100);
  });

  it('agrees with them on near misses of valid timestamps', () => {
    expect(expectSameAsReference(mutations(20_000))).toBeGreaterThan(1000);
  });

  it('agrees with them on what senders send', () => {
    const now = Date.now();
    const sent = Array.from({ length: 500 }, (_, i) => new Date(now - i * 7_777_777).toISOString());
    expect(
      expectSameAsReference([
        ...sent,
        ...sent.map((text) => text.replace('Z', '+03:00')),
        ...sent.map((text) => text.slice(0, 19) + '-11:30'),
      ]),
    ).toBe(1500);
  });
});
