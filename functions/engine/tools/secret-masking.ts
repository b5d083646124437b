/** What a secret becomes wherever a tool gives it back. */
export const SECRET_MARK = '[secret]';

/**
 * A base64 run inside a longer one (`Basic base64(user:secret)`) shares only the middle of the secret's own encoding;
 * shorter middles would mask chance matches in any base64 blob.
 */
const MIN_EMBEDDED_BASE64 = 8;

/**
 * A text to search, made of pieces of the original: runs kept as they were, and escapes undone (each one to the units
 * it spells, all standing for the escape's whole span). Without pieces, the original itself.
 */
interface View {
  text: string;
  pieces?: { at: number[]; from: number[]; to: number[]; undone: boolean[] };
}

/** A needle with its smallest period, so a run of overlapping occurrences is walked in one pass. */
interface Needle {
  text: string;
  tail: string;
  period: number;
}

export interface SecretMasker {
  /**
   * `text` with every form of every secret replaced by the mark, kept up to `end` (UTF-16 units): a secret starting
   * before `end` is masked whole even when it runs past it, and whatever follows `end` is dropped. A caller that read
   * only the start of a longer text passes `end` one longest form short of what it read, so the start of a secret whose
   * end it never saw is dropped rather than left unmasked.
   */
  text(text: string, end?: number): string;
  /** A copy of a JSON value with `text` applied to every string, object keys included, at any depth. */
  value(value: unknown): unknown;
  /** The most UTF-16 units one secret takes in any of its forms (0 without secrets). */
  readonly longest: number;
}

/**
 * Masks the values in every form a tool could give them back in: as they are; JSON-escaped as inside a string literal
 * (any character as `\uXXXX`, either case of hex, short escapes such as `\"`, `\\`, `\/`, `\n`); URL-encoded
 * (percent-encoded UTF-8 of any character, either case of hex, `+` for a space: encodeURIComponent, form encoding, and
 * encoders that keep some characters as they are); base64 of the whole value (standard and base64url, with or without
 * padding) and inside a longer base64 text (the part that depends on the value alone). Overlapping matches of
 * different secrets or forms become one mark, so no piece of either is left between two marks.
 *
 * The escaped forms are found by undoing the escapes in a copy of the text that remembers where each unit came from,
 * then searching that for the value: one pass per form however the escapes are mixed, with no pattern to backtrack
 * (a server echoing near-misses of a long secret costs time in proportion to its answer, not answer times secret).
 */
export function secretMasker(values: Iterable<string>): SecretMasker {
  const plain: Needle[] = [];
  const raw: Needle[] = [];
  let spaces = false;
  let longest = 0;
  for (const value of new Set(values)) {
    if (!value) continue;
    const bytes = Buffer.from(value, 'utf8');
    plain.push(needle(value));
    for (const form of new Set(base64Forms(bytes))) raw.push(needle(form));
    spaces ||= value.includes(' ');
    longest = Math.max(longest, 6 * value.length, 3 * bytes.length, Math.ceil(bytes.length / 3) * 4);
  }
  raw.push(...plain);
  const text = (input: string, end = input.length) => {
    if (plain.length === 0) return input.slice(0, end);
    const found: [number, number][] = [];
    const search = (view: View, needles: readonly Needle[]) => needles.forEach((each) => occurrences(view, each, found));
    search({ text: input }, raw);
    if (input.includes('\\')) search(jsonUnescaped(input), plain);
    if (input.includes('%')) search(urlDecoded(input, false), plain);
    if (spaces && input.includes('+')) search(urlDecoded(input, true), plain);
    return masked(input, end, found);
  };
  return { text, value: (value) => mapStrings(value, (input) => text(input)), longest };
}

function needle(text: string): Needle {
  // Knuth-Morris-Pratt's failure function: the longest proper prefix that is also a suffix gives the smallest period.
  const border = new Int32Array(text.length);
  for (let i = 1, k = 0; i < text.length; i += 1) {
    while (k > 0 && text[i] !== text[k]) k = border[k - 1]!;
    if (text[i] === text[k]) k += 1;
    border[i] = k;
  }
  const period = text.length - border[text.length - 1]!;
  return { text, tail: text.slice(text.length - period), period };
}

/**
 * Every stretch of the view covered by occurrences of the needle, as spans of the original text. Once an occurrence is
 * found, the next one a period on needs only that period checked; any other overlapping occurrence starts within a
 * period of the stretch's end (Fine and Wilf), which is where the search goes on.
 */
function occurrences(view: View, { text: needle, tail, period }: Needle, found: [number, number][]) {
  const { text, pieces } = view;
  for (let at = text.indexOf(needle); at !== -1; ) {
    let end = at + needle.length;
    while (text.startsWith(tail, end)) end += period;
    found.push(pieces ? [spanOf(pieces, at)[0], spanOf(pieces, end - 1)[1]] : [at, end]);
    at = text.indexOf(needle, Math.max(at + 1, end - period + 1));
  }
}

function masked(text: string, end: number, found: [number, number][]): string {
  if (found.length === 0) return text.slice(0, end);
  found.sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [start, stop] of found) {
    if (start >= end) break;
    if (start < at) at = Math.max(at, stop);
    else {
      out += text.slice(at, start) + SECRET_MARK;
      at = stop;
    }
  }
  return at < end ? out + text.slice(at, end) : out;
}

function base64Forms(bytes: Buffer): string[] {
  const standard = bytes.toString('base64');
  const url = bytes.toString('base64url');
  const forms = [standard, standard.replace(/=+$/, ''), url, url.padEnd(standard.length, '=')];
  for (const shift of [0, 1, 2]) {
    // Preceded by `shift` bytes of anything, the characters that hold only the value's bits are always these.
    const shifted = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    const middle = shifted.slice(Math.ceil((shift * 8) / 6), Math.floor(((shift + bytes.length) * 8) / 6));
    if (middle.length >= MIN_EMBEDDED_BASE64) forms.push(middle, middle.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return forms;
}

/** The span of the original text that unit `unit` of a view stands for. */
function spanOf(pieces: NonNullable<View['pieces']>, unit: number): [number, number] {
  let low = 0;
  let high = pieces.at.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (pieces.at[middle]! <= unit) low = middle;
    else high = middle - 1;
  }
  if (pieces.undone[low]) return [pieces.from[low]!, pieces.to[low]!];
  const from = pieces.from[low]! + unit - pieces.at[low]!;
  return [from, from + 1];
}

function viewBuilder(original: string) {
  const parts: string[] = [];
  const pieces = { at: [] as number[], from: [] as number[], to: [] as number[], undone: [] as boolean[] };
  let length = 0;
  let kept = 0;
  const add = (text: string, from: number, to: number, undone: boolean) => {
    if (!text) return;
    parts.push(text);
    pieces.at.push(length);
    pieces.from.push(from);
    pieces.to.push(to);
    pieces.undone.push(undone);
    length += text.length;
  };
  return {
    /** Units `from`..`to` of the original spell `text`; what lies between the last escape and this one is kept. */
    undo(text: string, from: number, to: number) {
      add(original.slice(kept, from), kept, from, false);
      add(text, from, to, true);
      kept = to;
    },
    view(): View {
      add(original.slice(kept), kept, original.length, false);
      return { text: parts.join(''), pieces };
    },
  };
}

const JSON_SHORT_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const JSON_ESCAPE = /\\(?:(["\\/bfnrt])|u([0-9a-fA-F]{4}))/g;
const URL_ESCAPE = /(?:%[0-9a-fA-F]{2})+|\+/g;

/** The text with JSON's string escapes undone (`\uXXXX` one UTF-16 unit each); anything else as it is. */
function jsonUnescaped(text: string): View {
  const view = viewBuilder(text);
  for (const match of text.matchAll(JSON_ESCAPE)) {
    view.undo(
      match[1] ? JSON_SHORT_ESCAPES[match[1]]! : String.fromCharCode(Number.parseInt(match[2]!, 16)),
      match.index,
      match.index + match[0].length,
    );
  }
  return view.view();
}

/**
 * The text with percent-encoding undone where it spells UTF-8 (a character from all its bytes' escapes), and with
 * `+` as a space when asked (form encoding); anything else, an invalid sequence included, as it is.
 */
function urlDecoded(text: string, plusIsSpace: boolean): View {
  const view = viewBuilder(text);
  for (const match of text.matchAll(URL_ESCAPE)) {
    if (match[0] === '+') {
      if (plusIsSpace) view.undo(' ', match.index, match.index + 1);
      continue;
    }
    const bytes = Buffer.from(match[0].replaceAll('%', ''), 'hex');
    for (let i = 0; i < bytes.length; ) {
      const lead = bytes[i]!;
      const size =
        lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
      // Buffer decodes a cut, overlong or surrogate sequence as U+FFFD, which no secret holds: it stays as it is.
      const character = size > 0 && i + size <= bytes.length ? bytes.subarray(i, i + size).toString('utf8') : '\uFFFD';
      if (character.includes('\uFFFD')) {
        i += 1;
        continue;
      }
      const from = match.index + 3 * i;
      view.undo(character, from, from + 3 * size);
      i += size;
    }
  }
  return view.view();
}

/**
 * A copy of a JSON value with its strings and keys passed through `map`, without recursion: a tool's answer may nest
 * deeper than the stack.
 */
function mapStrings(value: unknown, map: (text: string) => string): unknown {
  const copy = (item: unknown, pending: [object, unknown[] | Record<string, unknown>][]): unknown => {
    if (typeof item === 'string') return map(item);
    if (item === null || typeof item !== 'object') return item;
    const target = Array.isArray(item) ? [] : {};
    pending.push([item, target]);
    return target;
  };
  const pending: [object, unknown[] | Record<string, unknown>][] = [];
  const root = copy(value, pending);
  while (pending.length > 0) {
    const [source, target] = pending.pop()!;
    if (Array.isArray(source)) for (const item of source) (target as unknown[]).push(copy(item, pending));
    // defineProperty: a key `__proto__` from parsed JSON stays a key instead of setting the copy's prototype.
    else
      for (const [key, item] of Object.entries(source))
        Object.defineProperty(target, map(key), { value: copy(item, pending), enumerable: true, writable: true, configurable: true });
  }
  return root;
}
