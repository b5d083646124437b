import { isIPv4, isIPv6 } from 'node:net';

/**
 * Tells public unicast addresses from every private, local, service, link-local, multicast,
 * documentation and reserved range (IANA special-purpose registries for IPv4 and IPv6).
 */

type Cidr4 = readonly [number, number]; // [network as uint32, prefix length]

const NON_PUBLIC_IPV4: readonly Cidr4[] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (and cloud metadata endpoints)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation TEST-NET-1
  ['192.31.196.0', 24], // AS112
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // AS112 direct delegation
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation TEST-NET-2
  ['203.0.113.0', 24], // documentation TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, including broadcast 255.255.255.255
].map(([address, prefix]) => [ipv4ToInt(address as string), prefix as number] as const);

function ipv4ToInt(address: string): number {
  return address.split('.').reduce((value, octet) => value * 256 + Number(octet), 0);
}

function inCidr4(value: number, [network, prefix]: Cidr4): boolean {
  const size = 2 ** (32 - prefix);
  return Math.floor(value / size) === Math.floor(network / size);
}

export function isPublicIPv4(address: string): boolean {
  if (!isIPv4(address)) return false;
  const value = ipv4ToInt(address);
  return !NON_PUBLIC_IPV4.some((range) => inCidr4(value, range));
}

/** Expands an IPv6 literal (with `::` and a trailing dotted quad allowed) into 8 16-bit groups. */
function ipv6Groups(address: string): number[] | undefined {
  if (!isIPv6(address)) return undefined;
  let text = address;
  const dottedQuad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dottedQuad?.[1]) {
    const value = ipv4ToInt(dottedQuad[1]);
    text = `${text.slice(0, dottedQuad.index)}${Math.floor(value / 65536).toString(16)}:${(value % 65536).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const headGroups = parse(head);
  const tailGroups = tail === undefined ? [] : parse(tail);
  const zeros = new Array<number>(8 - headGroups.length - tailGroups.length).fill(0);
  return [...headGroups, ...zeros, ...tailGroups];
}

/**
 * Only global unicast (2000::/3) is public, minus its special blocks. Everything outside it
 * (loopback, unspecified, IPv4-mapped and -compatible, NAT64, unique-local, link-local, multicast) is not.
 */
export function isPublicIPv6(address: string): boolean {
  const groups = ipv6Groups(address);
  if (!groups) return false;
  const [g0 = 0, g1 = 0] = groups;
  if ((g0 & 0xe000) !== 0x2000) return false;
  if (g0 === 0x2001 && g1 < 0x0200) return false; // 2001::/23 IETF protocol assignments (Teredo, ORCHID, ...)
  if (g0 === 0x2001 && g1 === 0x0db8) return false; // 2001:db8::/32 documentation
  if (g0 === 0x2002) return false; // 6to4: tunnels to an embedded IPv4 address
  if ((g0 & 0xfff0) === 0x3ff0) return false; // 3fff::/20 documentation
  return true;
}
