/** What `String.prototype.isWellFormed` (ES2024) answers: no lone surrogate, so valid as UTF-8. */
export const isWellFormed = (text: string): boolean => text.isWellFormed();

/** `fatal`: invalid UTF-8 throws instead of becoming U+FFFD; `ignoreBOM`: a byte order mark stays in the text, where JSON refuses it. */
const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The JSON of a request body, which must be UTF-8: invalid bytes are refused (they would otherwise become U+FFFD,
 * silently altering the body), as is invalid JSON. Throws on either; callers answer in their own API's words.
 */
export function parseUtf8Json(bytes: Uint8Array): unknown {
  return JSON.parse(strictDecoder.decode(bytes));
}
