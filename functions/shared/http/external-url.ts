import { header, type HttpRequest } from './http-stack.ts';

/**
 * URLs an API hands back (poll URLs, an OpenAPI document's server) must work from where the caller stands. API
 * Gateway's `path` lacks the stage (`/prod`), and behind a custom domain the base path; `requestContext.path` has
 * whichever the caller used. So the external prefix is what `requestContext.path` holds before the route's own path (the `resource`
 * template with its path parameters), and the origin is the `Host` header the caller sent.
 *
 * Scheme: the `X-Forwarded-Proto` header when it says `http` or `https` (API Gateway sends `https`; the local
 * twin sends `http`), otherwise `https`. Without a usable host the URL is an absolute path on the same origin.
 */
export function externalUrl(request: HttpRequest, path: string): string {
  return `${externalOrigin(request)}${externalPrefix(request)}${path}`;
}

/** `/prod`, a custom domain's base path, or '' when the caller used neither. */
export function externalPrefix(request: HttpRequest): string {
  const external = segments(request.requestContext?.path);
  const template = segments(request.resource);
  if (template.length === 0 || external.length < template.length) return '';
  const tail = external.slice(external.length - template.length);
  // Parameters match any segment; everything else must be the route's own literal path, or no prefix is claimed.
  const matches = template.every((segment, i) => /^\{[^}]+\}$/.test(segment) || segment === tail[i]);
  if (!matches) return '';
  const prefix = external.slice(0, external.length - template.length);
  return prefix.length === 0 ? '' : `/${prefix.join('/')}`;
}

const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

function externalOrigin(request: HttpRequest): string {
  const host = [header(request, 'host'), request.requestContext?.domainName].find((candidate) => candidate && HOST.test(candidate));
  if (!host) return '';
  const forwarded = header(request, 'x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
  const scheme = forwarded === 'http' || forwarded === 'https' ? forwarded : 'https';
  return `${scheme}://${host}`;
}

function segments(path: string | undefined | null): string[] {
  return (path ?? '').split('/').filter((segment) => segment !== '');
}
