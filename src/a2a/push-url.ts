// Which webhook URLs a caller may ask an agent, through the gateway, to POST task updates to.
// The agent usually sits inside the gateway's network, so a push URL is a request forgery
// vector: it must not reach loopback, private, link-local (cloud metadata at 169.254.169.254)
// or otherwise non-global addresses, unless an operator listed its prefix.

import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export type PushUrlCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

// IANA special-purpose IPv4 registry entries that are not globally reachable, plus multicast and
// the reserved 240/4 (which holds the limited broadcast address).
const nonPublicIPv4 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  nonPublicIPv4.addSubnet(network, prefix, 'ipv4');
}

// Inside global unicast 2000::/3: the IETF protocol block (Teredo is taken apart before it), documentation ranges.
const nonPublicIPv6 = new BlockList();
for (const [network, prefix] of [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['3fff::', 20],
] as const) {
  nonPublicIPv6.addSubnet(network, prefix, 'ipv6');
}

/**
 * Whether `ip` is a globally reachable unicast address. IPv6 must be global unicast (2000::/3,
 * which excludes ::, ::1, fc00::/7, fe80::/10 and multicast); addresses that carry an IPv4 one
 * (IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32) are judged by what they carry.
 */
export function isPublicAddress(ip: string): boolean {
  const address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = isIP(address);
  if (family === 4) return !nonPublicIPv4.check(address, 'ipv4');
  if (family !== 6 || address.includes('%')) return false;
  const g = ipv6Groups(address);
  const ipv4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);

  if (zeroUpTo(5) && g[5] === 0xffff) return isPublicAddress(ipv4(g[6]!, g[7]!));
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return isPublicAddress(ipv4(g[6]!, g[7]!));
  if (g[0] === 0x2002) return isPublicAddress(ipv4(g[1]!, g[2]!));
  if (g[0] === 0x2001 && g[1] === 0) {
    // Teredo: the server's address in clear, the client's with every bit inverted.
    return isPublicAddress(ipv4(g[2]!, g[3]!)) && isPublicAddress(ipv4(~g[6]! & 0xffff, ~g[7]! & 0xffff));
  }
  if ((g[0]! & 0xe000) !== 0x2000) return false;
  return !nonPublicIPv6.check(address, 'ipv6');
}

/** The eight 16-bit groups of an address `isIP` accepted as IPv6 (a trailing dotted quad included). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros: string[] = new Array(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].map((group) => Number.parseInt(group, 16));
}

async function resolveAll(host: string): Promise<string[]> {
  const answers = await dnsLookup(host, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
}

/**
 * Allowed when the URL starts with an operator-listed prefix (both compared as parsed and
 * normalised, so `..` or case cannot step out of one), or when it is https with no userinfo and
 * its host is a public address or a name whose every address is public. Reasons name the host
 * only: a webhook URL's path and query often hold a token.
 *
 * Checking resolves the name once; whoever delivers should connect to the addresses checked, or
 * a name that answers differently the second time reaches inside after all.
 */
export async function checkPushUrl(
  url: unknown,
  allowedPrefixes: readonly string[],
  lookup: (host: string) => Promise<string[]> = resolveAll,
): Promise<PushUrlCheck> {
  if (typeof url !== 'string') return refuse('the push notification URL is not a string');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('the push notification URL is not an absolute URL');
  }
  const listed = allowedPrefixes.map(normalizedPrefix).filter((prefix) => prefix !== null);
  if (listed.some((prefix) => parsed.href.startsWith(prefix))) return { ok: true };

  const host = parsed.host;
  if (parsed.protocol !== 'https:') return refuse(`the push notification URL to ${host} must use https`);
  if (parsed.username !== '' || parsed.password !== '') return refuse(`the push notification URL to ${host} carries credentials`);
  const hostname = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (isIP(hostname) !== 0) {
    return isPublicAddress(hostname) ? { ok: true } : refuse(`the push notification host ${host} is not a public address`);
  }

  let addresses: string[];
  try {
    addresses = await lookup(hostname);
  } catch {
    return refuse(`the push notification host ${host} does not resolve`);
  }
  if (addresses.length === 0) return refuse(`the push notification host ${host} does not resolve`);
  const inside = addresses.find((address) => !isPublicAddress(address));
  if (inside !== undefined) return refuse(`the push notification host ${host} resolves to a non-public address (${inside})`);
  return { ok: true };
}

function normalizedPrefix(prefix: string): string | null {
  try {
    return new URL(prefix).href;
  } catch {
    return null;
  }
}

function refuse(reason: string): PushUrlCheck {
  return { ok: false, reason };
}
