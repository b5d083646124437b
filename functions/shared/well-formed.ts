/** What `String.prototype.isWellFormed` (ES2024, in Node 20) answers: no lone surrogate, so valid as UTF-8. */
export const isWellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

/** `fatal`: invalid UTF-8 throws instead of becoming U+FFFD; `ignoreBOM`: a byte order mark stays in the text, where JSON refuses it. */
const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The text of a request body that must be UTF-8, or undefined when it is not (a body is never silently altered). */
export function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return strictDecoder.decode(bytes);
  } catch {
    return undefined;
  }
}
