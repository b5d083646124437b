import { lookup } from 'node:dns/promises';
import { isIPv4, isIPv6 } from 'node:net';
import { isPublicIPv4, isPublicIPv6 } from '#shared/network/ip-addresses.ts';
import { publicUrlProblem, urlTextProblem } from '#shared/network/public-url.ts';

/**
 * Callback URLs follow the recording-link rule: https to a public host. The local server may allow
 * loopback receivers (`ALLOW_LOOPBACK_CALLBACKS=1`) so a developer can point an execution at a local test server.
 */
function isLoopbackUrl(rawUrl: string): boolean {
  try {
    const url = new URL(rawUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || (isIPv4(host) && host.startsWith('127.'));
  } catch {
    return false;
  }
}

export function callbackUrlProblem(rawUrl: string, allowLoopback: boolean): string | undefined {
  if (rawUrl.length > 2048) return 'must be at most 2048 characters';
  // Before the loopback allowance too: `http://127.0.0.1\@evil.com/` is loopback only to WHATWG parsers.
  const textProblem = urlTextProblem(rawUrl);
  if (textProblem) return textProblem;
  if (allowLoopback && isLoopbackUrl(rawUrl)) return undefined;
  return publicUrlProblem(rawUrl);
}

/** Checked again before each delivery: a public name may since resolve to a private address (DNS rebinding). */
export async function resolvedAddressProblem(rawUrl: string, allowLoopback: boolean): Promise<string | undefined> {
  if (allowLoopback && isLoopbackUrl(rawUrl)) return undefined;
  const host = new URL(rawUrl).hostname.replace(/^\[|\]$/g, '');
  const addresses = isIPv4(host) || isIPv6(host) ? [{ address: host }] : await lookup(host, { all: true });
  const privateAddress = addresses.find(({ address }) => (isIPv4(address) ? !isPublicIPv4(address) : !isPublicIPv6(address)));
  return privateAddress ? `host resolves to the non-public address ${privateAddress.address}` : undefined;
}
