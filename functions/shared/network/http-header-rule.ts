import { validateHeaderName, validateHeaderValue } from 'node:http';

/**
 * Which header names and values an outbound call can carry. The agents' tools call out through the pinned fetch
 * (pinned-fetch.ts): fetch's `Headers` first, then Node's HTTP client, which throws on a name that is not an RFC 9110
 * token and on a value holding anything but tabs, visible ASCII and the bytes 0x80-0xFF (so CR, LF and NUL). The
 * client's own checks are the rule, so it cannot drift from what is sent; `Headers` refuses no more than they do,
 * only trimming the spaces and line breaks around a value first.
 */
export function headerNameProblem(name: string): string | undefined {
  if (name === '') return 'not a header name: it is empty';
  if (accepted(() => validateHeaderName(name))) return undefined;
  const found = [...name].find((character) => !accepted(() => validateHeaderName(character)))!;
  return `not a header name: it holds ${described(found)}, and a name is letters, digits and !#$%&'*+-.^_\`|~ only`;
}

/** Why `value` can never be sent in a header; undefined when it can. */
export function headerValueProblem(value: string): string | undefined {
  if (accepted(() => validateHeaderValue('x', value))) return undefined;
  const found = [...value].find((character) => !accepted(() => validateHeaderValue('x', character)))!;
  return `the value holds ${described(found)}, which no HTTP header value may hold`;
}

function accepted(check: () => void): boolean {
  try {
    check();
    return true;
  } catch {
    return false;
  }
}

const NAMED: Record<string, string> = { '\r': 'a carriage return (CR)', '\n': 'a line feed (LF)', '\u0000': 'a NUL byte' };

function described(character: string): string {
  const point = character.codePointAt(0)!;
  const code = `U+${point.toString(16).toUpperCase().padStart(4, '0')}`;
  // A control character is named by its code, never printed into a message.
  const control = point < 0x20 || (point >= 0x7f && point <= 0x9f);
  return NAMED[character] ?? (control ? `the control character ${code}` : `"${character}" (${code})`);
}
