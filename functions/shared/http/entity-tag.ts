import { createHash } from 'node:crypto';

/*
 * Entity tags of answers a caller may keep and revalidate (RFC 9110, section 8.8.3 and 13.1.2). The tag is weak
 * (`W/"…"`): the function tags the bytes it returns, and API Gateway may then send them gzip- or deflate-encoded
 * (gateway-compression.ts), a representation whose bytes differ but whose content does not; a strong tag would claim
 * byte equality across both. `If-None-Match` is compared weakly, as RFC 9110 requires, so a tag comes back whole
 * whether a browser, a cache or a proxy that weakens tags when it compresses sends it.
 */

/** The weak tag of `body`: a digest of its bytes, so any change of them (a deploy, another host in the document) changes it. */
export function weakEntityTag(body: string): string {
  return `W/"${createHash('sha256').update(body, 'utf8').digest('base64url').slice(0, 27)}"`;
}

const opaque = (tag: string) => tag.trim().replace(/^W\//, '');

/** Whether `If-None-Match` names `tag` (or is `*`): the caller's copy is current, and 304 answers it. */
export function matchesIfNoneMatch(ifNoneMatch: string | undefined, tag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const wanted = opaque(tag);
  // Entity tags are quoted and hold no comma or quote inside, so the list splits on commas.
  return ifNoneMatch.split(',').some((candidate) => opaque(candidate) === wanted);
}
