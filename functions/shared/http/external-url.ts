import { header, type HttpRequest } from './http-stack.ts';
import { isHttpApiEvent } from './gateway-event.ts';

/**
 * URLs an API hands back (poll URLs, an OpenAPI document's server) must work from where the caller stands. API
 * Gateway's `path` lacks the stage (`/prod`), and behind a custom domain the base path; `requestContext.path` has
 * whichever the caller used. So the external prefix is what `requestContext.path` holds before the route's own path (the `resource`
 * template with its path parameters), and the origin is the `Host` header the caller sent.
 *
 * Scheme: the `X-Forwarded-Proto` header when it says `http` or `https` (API Gateway sends `https`; the local
 * twin sends `http`), otherwise `https`. A Host is used only when it is a name DNS could hold (labels of at most 63
 * letters, digits and hyphens, 253 characters in all), an IPv4 address or a bracketed IPv6 one, with at most a port
 * from 1 to 65535: whoever sends a longer name or a port of 99999 gets the deployment's own domain name
 * (`requestContext.domainName`), or without one an absolute path on the same origin, never their own text back.
 */
export function externalUrl(request: HttpRequest, path: string): string {
  return `${externalOrigin(request)}${externalPrefix(request)}${path}`;
}

/**
 * `/prod`, a custom domain's base path, or '' when the caller used neither. An HTTP API's `$default` stage has no path,
 * and its 2.0 event does not say an API mapping's key (its `rawPath` starts after it): '' there, and a caller behind a
 * mapping key sets the document's server variable itself (functions/inbound/README.md).
 */
export function externalPrefix(request: HttpRequest): string {
  if (isHttpApiEvent(request)) return '';
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

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const IPV6 = /^\[[0-9A-Fa-f:.]{2,45}\]$/;
const MAX_HOSTNAME_CHARS = 253;

/** `host[:port]` as a URL may carry it, within DNS's bounds and a real port. */
function isBoundedHost(candidate: string | undefined): candidate is string {
  const parts = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(candidate ?? '');
  if (!parts) return false;
  const [, name = '', port] = parts;
  if (port !== undefined && !(Number(port) >= 1 && Number(port) <= 65535)) return false;
  if (name.startsWith('[')) return IPV6.test(name) && URL.canParse(`http://${name}/`);
  return name.length > 0 && name.length <= MAX_HOSTNAME_CHARS && name.split('.').every((label) => LABEL.test(label));
}

function externalOrigin(request: HttpRequest): string {
  const host = [header(request, 'host'), request.requestContext?.domainName].find(isBoundedHost);
  if (!host) return '';
  const forwarded = header(request, 'x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
  const scheme = forwarded === 'http' || forwarded === 'https' ? forwarded : 'https';
  return `${scheme}://${host}`;
}

function segments(path: string | undefined | null): string[] {
  return (path ?? '').split('/').filter((segment) => segment !== '');
}
