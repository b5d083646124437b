import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIPv4, isIPv6 } from 'node:net';
import { Readable } from 'node:stream';
import { isPublicIPv4, isPublicIPv6 } from './ip-addresses.ts';
import { bareHost, isLoopbackAddress } from './public-url.ts';

/** The host cannot be reached under the outbound rule; `reason` is safe to show (it never holds the URL). */
export class AddressRefusedError extends Error {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(reason, options);
    this.name = 'AddressRefusedError';
  }
}

export interface AddressRule {
  /** Test-only: loopback addresses pass too. */
  allowLoopback: boolean;
  /** DNS lookup, injectable for tests; default node:dns/promises lookup(host, {all: true}). */
  lookup?: (host: string) => Promise<{ address: string; family: number }[]>;
}

/** Every address the host resolves to must be public (one private answer refuses it: the connection could take it). */
export async function resolvePublicAddresses(host: string, rule: AddressRule): Promise<LookupAddress[]> {
  const addresses = isIPv4(host) || isIPv6(host) ? [{ address: host, family: isIPv4(host) ? 4 : 6 }] : await lookupOnce(host, rule);
  if (addresses.length === 0) throw new AddressRefusedError('host does not resolve');
  const refused = addresses.find(({ address }) => !isAllowedAddress(address, rule.allowLoopback));
  if (refused) throw new AddressRefusedError(`host resolves to the non-public address ${refused.address}`);
  return addresses;
}

async function lookupOnce(host: string, rule: AddressRule): Promise<LookupAddress[]> {
  try {
    return await (rule.lookup ?? defaultLookup)(host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new AddressRefusedError(`host does not resolve${code ? ` (${code})` : ''}`, { cause: error });
  }
}

const defaultLookup = (host: string) => dnsLookup(host, { all: true });

function isAllowedAddress(address: string, allowLoopback: boolean): boolean {
  if (allowLoopback && isLoopbackAddress(address)) return true;
  return isIPv4(address) ? isPublicIPv4(address) : isPublicIPv6(address);
}

/** net calls it with `all: true` when it tries several addresses (autoSelectFamily), otherwise for one. */
export function pinnedLookup(addresses: LookupAddress[]) {
  return (_host: string, options: LookupOptions, callback: (error: null, address: string | LookupAddress[], family?: number) => void) => {
    const wanted = options.family === 4 || options.family === 6 ? addresses.filter(({ family }) => family === options.family) : addresses;
    const answer = wanted.length > 0 ? wanted : addresses;
    if (options.all) callback(null, answer);
    else callback(null, answer[0]!.address, answer[0]!.family);
  };
}

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * A `fetch` whose connection goes only to addresses checked under the rule: the host is resolved once and the
 * socket's lookup answers those addresses alone, so a second DNS answer (rebinding) cannot send it elsewhere. The
 * TLS name is still the host's. Redirects are answered as they are, never followed; a fresh socket per request,
 * because a pooled one may have been opened for another answer. Agents' tools (HTTP and MCP) call out through it.
 */
export function pinnedFetch(rule: AddressRule): FetchLike {
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AddressRefusedError('scheme must be http or https');
    const host = bareHost(url.hostname);
    const addresses = await resolvePublicAddresses(host, rule);
    const method = init.method ?? 'GET';
    const headers = Object.fromEntries(new Headers(init.headers));
    const body = init.body == null ? undefined : Buffer.from(await new Response(init.body).arrayBuffer());
    if (body && headers['content-length'] === undefined) headers['content-length'] = String(body.length);
    const signal = init.signal ?? undefined;
    signal?.throwIfAborted();
    return new Promise<Response>((resolve, reject) => {
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const request = send(
        {
          method,
          host,
          port: url.port ? Number(url.port) : undefined,
          path: `${url.pathname}${url.search}`,
          headers,
          agent: false,
          lookup: pinnedLookup(addresses),
        },
        (response) => resolve(asWebResponse(response, method)),
      );
      request.on('error', reject);
      signal?.addEventListener('abort', () => request.destroy(signal.reason as Error), { once: true });
      request.end(body);
    });
  };
}

function asWebResponse(response: IncomingMessage, method: string): Response {
  const status = response.statusCode ?? 502;
  const headers = new Headers();
  for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) headers.append(response.rawHeaders[i]!, response.rawHeaders[i + 1]!);
  const hasBody = method !== 'HEAD' && status !== 204 && status !== 304;
  if (!hasBody) response.resume();
  return new Response(hasBody ? (Readable.toWeb(response) as ReadableStream<Uint8Array>) : null, { status, headers });
}
