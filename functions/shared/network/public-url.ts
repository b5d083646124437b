import { isIPv4, isIPv6 } from 'node:net';
import { isPublicIPv4, isPublicIPv6 } from './ip-addresses.ts';

/**
 * Public https link rules: recording links (functions/inbound/README.md#webhook-behaviour-beyond-the-brief) and run
 * callbacks use the same guard.
 * The raw text is checked as well as the WHATWG parse, because the parser rewrites ambiguous hosts
 * (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`, `%31%32%37.0.0.1`, full-width digits) into addresses.
 * Returns the reason the link is refused, or undefined when it is acceptable.
 */
export function publicUrlProblem(rawUrl: string, allowedHosts: readonly string[] = []): string | undefined {
  const textProblem = urlTextProblem(rawUrl);
  if (textProblem) return textProblem;
  const schemeMatch = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(rawUrl);
  if (!schemeMatch || schemeMatch[1]?.toLowerCase() !== 'https') return 'scheme must be https';
  const afterScheme = rawUrl.slice(schemeMatch[0].length);
  if (!afterScheme.startsWith('//')) return 'must be an absolute https://host/... address';
  const authority = /^[^/\\?#]*/.exec(afterScheme.slice(2))?.[0] ?? '';
  if (authority.includes('@')) return 'must not contain credentials';

  const rawHost = hostOfAuthority(authority);
  if (rawHost === undefined) return 'host or port is malformed';
  const rawHostProblem = hostProblem(rawHost.toLowerCase());
  if (rawHostProblem) return rawHostProblem;

  let parsed: URL;
  try {
    parsed = new URL(rawUrl);
  } catch {
    return 'is not a valid URL';
  }
  if (parsed.username || parsed.password) return 'must not contain credentials';
  const parsedHost = parsed.hostname.toLowerCase();
  const parsedHostProblem = hostProblem(parsedHost);
  if (parsedHostProblem) return parsedHostProblem;

  if (allowedHosts.length > 0 && !allowedHosts.some((pattern) => hostMatches(parsedHost, pattern))) {
    return 'host is not in the allow-list of this source';
  }
  return undefined;
}

/**
 * Characters URL parsers disagree on. WHATWG reads `\` as `/` in https URLs, so `https://evil.com\@127.0.0.1/x`
 * is a request to evil.com here, while parsers that follow RFC 3986 (and many HTTP clients and proxies) see the
 * user `evil.com\` and the host 127.0.0.1. Control characters are stripped or kept depending on the parser.
 * No real recording or callback link needs either, so both are refused anywhere in the URL.
 */
export function urlTextProblem(rawUrl: string): string | undefined {
  if (/\s/.test(rawUrl)) return 'must not contain spaces';
  if (rawUrl.includes('\\')) return 'must not contain backslashes';
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this check refuses
  if (/[\u0000-\u001f\u007f]/.test(rawUrl)) return 'must not contain control characters';
  return undefined;
}

/** Strips the port; answers undefined when the port is not a plain number. */
function hostOfAuthority(authority: string): string | undefined {
  if (authority.startsWith('[')) {
    const end = authority.indexOf(']');
    if (end < 0) return undefined;
    const rest = authority.slice(end + 1);
    if (rest !== '' && !/^:\d{0,5}$/.test(rest)) return undefined;
    return authority.slice(0, end + 1);
  }
  const colon = authority.lastIndexOf(':');
  if (colon < 0) return authority;
  if (!/^\d{0,5}$/.test(authority.slice(colon + 1))) return undefined;
  return authority.slice(0, colon);
}

const CANONICAL_IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const NUMERIC_LABEL = /^(0x[0-9a-f]*|\d+)$/;
const NON_PUBLIC_SUFFIXES = ['localhost', 'local', 'localdomain', 'internal', 'home.arpa', 'arpa', 'test', 'invalid', 'onion'];

function hostProblem(host: string): string | undefined {
  if (host === '') return 'host is missing';
  if (host.includes('%')) return 'host must not be percent-encoded';
  if (host.startsWith('[')) {
    const literal = host.slice(1, -1);
    if (!isIPv6(literal)) return 'host is not a valid IPv6 address';
    return isPublicIPv6(literal) ? undefined : 'host must be a public address';
  }
  const labels = host.replace(/\.$/, '').split('.');
  // WHATWG treats a host whose last label is numeric as IPv4, whatever the other labels say.
  if (NUMERIC_LABEL.test(labels[labels.length - 1] ?? '')) {
    if (!CANONICAL_IPV4.test(host)) return 'host is an ambiguous numeric address';
    return isPublicIPv4(host) ? undefined : 'host must be a public address';
  }
  if (isIPv4(host)) return isPublicIPv4(host) ? undefined : 'host must be a public address';
  if (labels.length < 2) return 'host must be a public domain name';
  const name = labels.join('.');
  if (NON_PUBLIC_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`))) {
    return 'host must be a public domain name';
  }
  return undefined;
}

/** An allow-list entry is a host name, or `*.example.com` for any subdomain of example.com. */
function hostMatches(host: string, pattern: string): boolean {
  const wanted = pattern.toLowerCase();
  if (wanted.startsWith('*.')) return host.endsWith(wanted.slice(1));
  return host === wanted;
}

/**
 * Recording links, at acceptance and again at download: the public rule above, or, with the test-only allowance
 * (`ALLOW_LOOPBACK_RECORDINGS=1`, never set by CDK), https to a loopback host.
 */
export function recordingUrlProblem(
  rawUrl: string,
  options: { allowedHosts?: readonly string[]; allowLoopback: boolean },
): string | undefined {
  // The text check comes before the loopback allowance: `https://127.0.0.1\@evil.com/` is loopback only to WHATWG parsers.
  return (
    urlTextProblem(rawUrl) ??
    (options.allowLoopback && isLoopbackUrl(rawUrl) ? loopbackUrlProblem(rawUrl) : publicUrlProblem(rawUrl, options.allowedHosts))
  );
}

/** Loopback in both the raw text and the WHATWG parse, so an ambiguous spelling (`127.1`, `0x7f.1`) gets no allowance. */
function isLoopbackUrl(rawUrl: string): boolean {
  const rawHost = /^https?:\/\/(\[[^\]]*\]|[^/?#:]*)/i.exec(rawUrl)?.[1]?.toLowerCase();
  if (rawHost === undefined || !URL.canParse(rawUrl)) return false;
  const parsedHost = new URL(rawUrl).hostname;
  return rawHost === parsedHost && isLoopbackHost(bareHost(parsedHost));
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || isLoopbackAddress(host);
}

export function isLoopbackAddress(address: string): boolean {
  return address === '::1' || (isIPv4(address) && address.startsWith('127.'));
}

/** publicUrlProblem without its host check, which a loopback host fails by design; isLoopbackUrl left no room for credentials. */
function loopbackUrlProblem(rawUrl: string): string | undefined {
  return /^https:\/\//i.test(rawUrl) ? undefined : 'scheme must be https';
}

export function bareHost(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '');
}

/**
 * Tool URLs (templates): checked at publish with their placeholders filled, so a literal private, loopback or
 * metadata host fails there; the call checks the rendered URL again, resolved. Public tools are https only; the
 * test-only allowance (`ALLOW_LOOPBACK_TOOLS=1`) lets http(s) to a loopback host through.
 */
export function toolUrlProblem(url: string, allowLoopback: boolean): string | undefined {
  const filled = url.replace(/\{\{[^}]*\}\}/g, 'x');
  const textProblem = urlTextProblem(filled);
  if (textProblem) return textProblem;
  if (allowLoopback && isLoopbackUrl(filled.replace(/^http:/i, 'https:')))
    return /^https?:\/\//i.test(filled) ? undefined : 'scheme must be http or https';
  return publicUrlProblem(filled);
}
