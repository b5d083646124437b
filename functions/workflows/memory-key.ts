import { MAX_MEMORY_KEY_BYTES } from '#shared/limits.ts';

/**
 * A memory key (of `initial_memory` or a memory node's `set`) becomes a sort key (`key#<name>`), which
 * DynamoDB bounds in bytes; answers what is wrong with it, or undefined.
 */
export function memoryKeyProblem(key: string): string | undefined {
  if (key.length === 0) return 'must not be empty';
  const bytes = Buffer.byteLength(key, 'utf8');
  return bytes > MAX_MEMORY_KEY_BYTES ? `key is ${bytes} bytes of UTF-8; at most ${MAX_MEMORY_KEY_BYTES} bytes` : undefined;
}
