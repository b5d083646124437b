/**
 * JSON text laid out again (compact, or indented as JSON.stringify(value, null, 2) would), its strings, numbers and
 * literals copied as written. Parsing and stringifying would round a number past double precision
 * (`12345678901234567890123` becomes `12345678901234567000`), and a hand-off keeps what its sender wrote.
 * `text` must be valid JSON (parse it first).
 */
export function layOutJson(text: string, indent = 0): string {
  let out = '';
  let depth = 0;
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

function skipSpace(text: string, at: number): number {
  while (text[at] === ' ' || text[at] === '\t' || text[at] === '\n' || text[at] === '\r') at += 1;
  return at;
}

/** Just past the string whose opening quote is at `at`. */
function stringEnd(text: string, at: number): number {
  for (let i = at + 1; i < text.length; i += 1) {
    if (text[i] === '\\') i += 1;
    else if (text[i] === '"') return i + 1;
  }
  return text.length;
}
