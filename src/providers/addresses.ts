import { BlockList, isIP } from 'node:net';

// What kind of address an IP is, for the two places the gateway sends somewhere a caller
// named: an A2A push-notification webhook (a2a/) and the probe of a draft provider
// (POST /admin/v1/providers/test). Both guard against request forgery into the gateway's own
// network, so both judge an address the same way, embedded forms included.

/**
 * `public`: globally reachable unicast. `metadata` and `link_local` are never a provider's
 * address (cloud metadata services live there). The rest are inside some network: loopback,
 * private (RFC 1918, fc00::/7), shared (100.64.0.0/10, carrier-grade NAT), unspecified
 * (0.0.0.0/8, ::) and reserved (multicast, documentation, benchmarking, 240/4, …).
 */
export type AddressClass = 'public' | 'metadata' | 'link_local' | 'loopback' | 'private' | 'shared' | 'unspecified' | 'reserved';

// Cloud instance metadata services: AWS, GCP, Azure and Oracle at 169.254.169.254 (AWS's IPv6
// one at fd00:ec2::254, its ECS task endpoint at 169.254.170.2), Alibaba at 100.100.100.200,
// Azure's wire server at 168.63.129.16 (a public address), Oracle's older 192.0.0.192.
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16', '192.0.0.192']);
const METADATA_V6 = new BlockList();
METADATA_V6.addAddress('fd00:ec2::254', 'ipv6');

function ipv4List(entries: ReadonlyArray<readonly [string, number]>): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of entries) list.addSubnet(network, prefix, 'ipv4');
  return list;
}

const V4: ReadonlyArray<readonly [AddressClass, BlockList]> = [
  ['link_local', ipv4List([['169.254.0.0', 16]])],
  ['loopback', ipv4List([['127.0.0.0', 8]])],
  ['unspecified', ipv4List([['0.0.0.0', 8]])],
  [
    'private',
    ipv4List([
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
    ]),
  ],
  ['shared', ipv4List([['100.64.0.0', 10]])],
  // IANA special-purpose entries that are not globally reachable, multicast, and the
  // reserved 240/4 (which holds the limited broadcast address).
  [
    'reserved',
    ipv4List([
      ['192.0.0.0', 24],
      ['192.0.2.0', 24],
      ['192.88.99.0', 24],
      ['198.18.0.0', 15],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
      ['224.0.0.0', 4],
      ['240.0.0.0', 4],
    ]),
  ],
];

// Inside global unicast 2000::/3: the IETF protocol block (Teredo is taken apart before it), documentation ranges.
const reservedV6 = new BlockList();
for (const [network, prefix] of [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['3fff::', 20],
] as const) {
  reservedV6.addSubnet(network, prefix, 'ipv6');
}

/** Without the brackets a URL's hostname keeps around an IPv6 literal. */
export function bareAddress(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * The class of an IP address; `reserved` for anything that is not one. An address that
 * carries an IPv4 one (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16,
 * Teredo 2001::/32) is judged by what it carries: the worse of the two for Teredo.
 */
export function addressClass(ip: string): AddressClass {
  const address = bareAddress(ip);
  const family = isIP(address);
  if (family === 4) {
    if (METADATA.has(address)) return 'metadata';
    return V4.find(([, list]) => list.check(address, 'ipv4'))?.[0] ?? 'public';
  }
  // A zone (fe80::1%eth0) only ever qualifies a link-local address.
  if (family !== 6) return 'reserved';
  if (address.includes('%')) return 'link_local';
  if (METADATA_V6.check(address, 'ipv6')) return 'metadata';
  const g = ipv6Groups(address);
  const ipv4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);

  if (zeroUpTo(8)) return 'unspecified';
  if (zeroUpTo(7) && g[7] === 1) return 'loopback';
  if (zeroUpTo(5) && g[5] === 0xffff) return addressClass(ipv4(g[6]!, g[7]!));
  // The deprecated IPv4-compatible ::a.b.c.d: never a public address, yet an old stack may route it as the IPv4 one.
  if (zeroUpTo(6)) {
    const carried = addressClass(ipv4(g[6]!, g[7]!));
    return carried === 'public' ? 'reserved' : carried;
  }
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return addressClass(ipv4(g[6]!, g[7]!));
  if (g[0] === 0x2002) return addressClass(ipv4(g[1]!, g[2]!));
  if (g[0] === 0x2001 && g[1] === 0) {
    // Teredo: the server's address in clear, the client's with every bit inverted.
    const server = addressClass(ipv4(g[2]!, g[3]!));
    return server !== 'public' ? server : addressClass(ipv4(~g[6]! & 0xffff, ~g[7]! & 0xffff));
  }
  if ((g[0]! & 0xffc0) === 0xfe80) return 'link_local';
  if ((g[0]! & 0xfe00) === 0xfc00) return 'private';
  if ((g[0]! & 0xe000) !== 0x2000) return 'reserved';
  return reservedV6.check(address, 'ipv6') ? 'reserved' : 'public';
}

/** Whether `ip` is a globally reachable unicast address (embedded IPv4 judged as such). */
export function isPublicAddress(ip: string): boolean {
  return addressClass(ip) === 'public';
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

/** Null when `text` is an IP address or an address/prefix CIDR, else why not. */
export function invalidCidr(text: string): string | null {
  const parts = text.trim().split('/');
  if (parts.length > 2) return 'has more than one "/"';
  const [address = '', prefix] = parts;
  if (address.includes('%')) return 'an IPv6 zone (%name) cannot be matched';
  const family = isIP(address);
  if (family === 0) return `${JSON.stringify(address)} is not an IP address`;
  if (prefix === undefined) return null;
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return `the prefix length must be a number from 0 to ${max}`;
  return null;
}

/** A list of addresses and CIDR ranges (`10.0.0.0/8`, `::1`, `fd00::/8`) an address is looked up in. */
export class AddressList {
  readonly #list = new BlockList();
  #empty = true;

  /** Throws a TypeError naming the first entry `invalidCidr` refuses; `what` names the list in it. */
  constructor(cidrs: readonly string[], what = 'address list entry') {
    for (const cidr of cidrs) {
      const why = invalidCidr(cidr);
      if (why !== null) throw new TypeError(`${what} ${JSON.stringify(cidr)}: ${why}`);
      const [address = '', prefix] = cidr.trim().split('/');
      const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) this.#list.addAddress(address, family);
      else this.#list.addSubnet(address, Number(prefix), family);
      this.#empty = false;
    }
  }

  has(address: string | undefined): boolean {
    if (this.#empty || address === undefined) return false;
    const bare = bareAddress(address);
    const family = isIP(bare);
    if (family === 4) return this.#list.check(bare, 'ipv4');
    if (family !== 6) return false;
    // A dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d; an IPv4 rule must still match it.
    const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(bare);
    if (mapped !== null && this.#list.check(mapped[1]!, 'ipv4')) return true;
    return this.#list.check(bare, 'ipv6');
  }
}
