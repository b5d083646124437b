/**
 * The source text of a member of a JSON text's top-level object, exactly as written: JSON.parse would round a number
 * past double precision (`12345678901234567890123`), and a value handed on must stay what the sender wrote. The text
 * must be valid JSON (parse it first); a name given twice answers the last value, as JSON.parse keeps the last.
 */
export function topLevelMemberText(json: string, name: string): string | undefined {
  let at = skipSpace(json, 0);
  if (json[at] !== '{') return undefined;
  at = skipSpace(json, at + 1);
  let found: string | undefined;
  while (at < json.length && json[at] !== '}') {
    const keyEnd = stringEnd(json, at);
    const key = JSON.parse(json.slice(at, keyEnd)) as string;
    at = skipSpace(json, skipSpace(json, keyEnd) + 1);
    const valueEnd = valueEndAt(json, at);
    if (key === name) found = json.slice(at, valueEnd);
    at = skipSpace(json, valueEnd);
    if (json[at] === ',') at = skipSpace(json, at + 1);
  }
  return found;
}

const isSpace = (character: string | undefined) => character === ' ' || character === '\t' || character === '\n' || character === '\r';

function skipSpace(json: string, at: number): number {
  while (isSpace(json[at])) at += 1;
  return at;
}

/** Just past the string starting at `at` (its opening quote). */
function stringEnd(json: string, at: number): number {
  for (let i = at + 1; i < json.length; i += 1) {
    if (json[i] === '\\') i += 1;
    else if (json[i] === '"') return i + 1;
  }
  return json.length;
}

/** Just past the value starting at `at`: a string, an object or array (strings inside skipped whole), or a literal. */
function valueEndAt(json: string, at: number): number {
  if (json[at] === '"') return stringEnd(json, at);
  if (json[at] === '{' || json[at] === '[') {
    let depth = 0;
    for (let i = at; i < json.length; i += 1) {
      const character = json[i];
      if (character === '"') i = stringEnd(json, i) - 1;
      else if (character === '{' || character === '[') depth += 1;
      else if (character === '}' || character === ']') {
        depth -= 1;
        if (depth === 0) return i + 1;
      }
    }
    return json.length;
  }
  let i = at;
  while (i < json.length && json[i] !== ',' && json[i] !== '}' && json[i] !== ']' && !isSpace(json[i])) i += 1;
  return i;
}

/**
 * JSON text laid out again (compact, or indented as JSON.stringify(value, null, 2) would), its strings, numbers and
 * literals copied as written. Parsing and stringifying would round a number past double precision
 * (`12345678901234567890123` becomes `12345678901234567000`), and a hand-off keeps what its sender wrote.
 * `text` must be valid JSON (parse it first). `atDepth`: the nesting it is written at, inside a larger value laid out the
 * same way (its first line is not indented: it follows what precedes it).
 */
export function layOutJson(text: string, indent = 0, atDepth = 0): string {
  let out = '';
  let depth = atDepth;
  const newline = () => (indent > 0 ? `\n${' '.repeat(indent * depth)}` : '');
  for (let at = 0; at < text.length; ) {
    const character = text[at]!;
    if (character === ' ' || character === '\t' || character === '\n' || character === '\r') {
      at += 1;
    } else if (character === '"') {
      const end = stringEnd(text, at);
      out += text.slice(at, end);
      at = end;
    } else if (character === '{' || character === '[') {
      const close = character === '{' ? '}' : ']';
      const next = skipSpace(text, at + 1);
      // Empty, as JSON.stringify writes it: `{}` and `[]` on one line.
      if (text[next] === close) {
        out += character + close;
        at = next + 1;
      } else {
        depth += 1;
        out += character + newline();
        at += 1;
      }
    } else if (character === '}' || character === ']') {
      depth -= 1;
      out += newline() + character;
      at += 1;
    } else if (character === ',') {
      out += `,${newline()}`;
      at += 1;
    } else if (character === ':') {
      out += indent > 0 ? ': ' : ':';
      at += 1;
    } else {
      let end = at;
      while (end < text.length && !'{}[],: \t\n\r"'.includes(text[end]!)) end += 1;
      out += text.slice(at, end);
      at = end;
    }
  }
  return out;
}
