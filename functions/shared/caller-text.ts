import { isWellFormed } from './http/well-formed.ts';
import * as z from './zod.ts';

/**
 * The one rule for text a caller sends that is stored: well-formed Unicode. JSON text may spell half of a surrogate
 * pair on its own (`"\ud800"`); JSON.parse makes it a lone surrogate, which is not a character, has no UTF-8 form,
 * and is refused by DynamoDB (string attributes must be valid UTF-8) and by strict JSON parsers downstream (the
 * analysis platform's, a model provider's, a client's). So it is refused where it arrives, with a 400 naming the
 * field, rather than stored and failing later where the caller cannot see it.
 */
export const NOT_WELL_FORMED = 'must be well-formed Unicode (no lone surrogate)';
export const KEY_NOT_WELL_FORMED = 'key must be well-formed Unicode (no lone surrogate)';

/** The check itself, for a string schema with other checks: `z.string().check(z.maxLength(64), wellFormed())`. */
const wellFormed = () => z.refine<string>(isWellFormed, NOT_WELL_FORMED);

/** A caller's string that is stored: any text, well-formed, after the field's own checks. */
export const callerText = (...checks: z.core.$ZodCheck<string>[]) => z.string().check(...checks, wellFormed());

/** Where a JSON value holds a key or a string that is not well-formed: its path below the value, and which it is. */
export interface IllFormedText {
  path: (string | number)[];
  key: boolean;
}

/**
 * A key or string of a parsed JSON value that is not well-formed (the first met, depth first), or undefined. Walked
 * without recursion, each value remembering only its parent, so a hostile value nested far deeper than the stack costs
 * time and memory in proportion to its size.
 */
export function findIllFormedText(value: unknown): IllFormedText | undefined {
  const parents: number[] = [-1];
  const keys: (string | number)[] = [''];
  const pathOf = (node: number, last?: string) => {
    const path: (string | number)[] = last === undefined ? [] : [last];
    for (let at = node; at > 0; at = parents[at]!) path.unshift(keys[at]!);
    return path;
  };
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [current, node] = pending.pop()!;
    if (typeof current === 'string') {
      if (!isWellFormed(current)) return { path: pathOf(node), key: false };
      continue;
    }
    if (typeof current !== 'object' || current === null) continue;
    const entries: [string | number, unknown][] = Array.isArray(current)
      ? current.map((item: unknown, index) => [index, item])
      : Object.entries(current);
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const [key, child] = entries[i]!;
      if (typeof key === 'string' && !isWellFormed(key)) return { path: pathOf(node, key), key: true };
      parents.push(node);
      keys.push(key);
      pending.push([child, keys.length - 1]);
    }
  }
  return undefined;
}

/** The check for a JSON value a caller sends whole (metadata, input, memory): every key and string, at any depth. */
export const wellFormedJson = () =>
  z.superRefine<unknown>((value, context) => {
    const found = findIllFormedText(value);
    if (found) context.addIssue({ code: 'custom', path: found.path, message: found.key ? KEY_NOT_WELL_FORMED : NOT_WELL_FORMED });
  });
