import { createHash, randomBytes } from 'node:crypto';

/**
 * Secrets (link tokens, API keys) are 256 random bits, shown once and stored only as SHA-256 hashes.
 * Lookups go by hash, so the stored value never meets the presented one in a variable-time comparison.
 */
export function newSecret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Enough of a secret to recognise it in a list, far too little to use it. */
export function secretPrefix(secret: string, prefixLength: number): string {
  return secret.slice(0, prefixLength + 6);
}

export function newId(prefix: string): string {
  return `${prefix}${randomBytes(9).toString('base64url')}`;
}
