import { createHash } from 'node:crypto';
import { MAX_INLINE_KEY_PART_BYTES, MAX_MEMORY_KEY_BYTES } from '#shared/limits.ts';

/**
 * Keys of the user state table, bounded for any id the API accepts (partition keys at most 2,048 bytes,
 * sort keys 1,024). Short values keep their readable form, so an operator can find a user's items; long
 * ones become their SHA-256, marked so that no readable value can ever produce the same key.
 */
const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest('base64url');

/**
 * One caller id inside a partition key. Percent-encoding keeps `#` out of the value (so `a#b`/`c` and
 * `a`/`b#c` stay apart) and never produces `%~`, which marks the hashed form.
 */
export function keyPart(value: string): string {
  const encoded = encodeURIComponent(value);
  return encoded.length <= MAX_INLINE_KEY_PART_BYTES ? encoded : `%~${sha256(value)}`;
}

export const memoryPartitionKey = (projectId: string, userId: string) => `memory#${keyPart(projectId)}#${keyPart(userId)}`;

export const threadPartitionKey = (projectId: string, userId: string, threadId: string) =>
  `thread#${keyPart(projectId)}#${keyPart(userId)}#${keyPart(threadId)}`;

/**
 * A memory value's sort key: `key#<name>` as the caller wrote it (validation bounds names to
 * MAX_MEMORY_KEY_BYTES), `keyh#<sha256>` for anything longer that reaches here; the item keeps the name.
 */
export function memorySortKey(name: string): string {
  return Buffer.byteLength(name, 'utf8') <= MAX_MEMORY_KEY_BYTES ? `key#${name}` : `keyh#${sha256(name)}`;
}
