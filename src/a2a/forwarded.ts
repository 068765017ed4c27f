// The origin callers reach the gateway at, for the URLs a served agent card advertises. Behind
// a reverse proxy that is the proxy's scheme, host and path prefix, which only the proxy can
// say: its forwarding headers count only when the peer is a configured trusted proxy, else any
// caller could point the card (and the clients that follow it) at a host of its choosing.

import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { AddressList } from '../providers/index.js';

/** The addresses and networks of the proxies whose forwarding headers are believed. */
export class TrustedProxies {
  readonly #list: AddressList;

  /** Each entry an address or a CIDR (`10.0.0.0/8`, `::1`, `fd00::/8`); throws on one `invalidCidr` refuses. */
  constructor(cidrs: readonly string[]) {
    this.#list = new AddressList(cidrs, 'trusted proxy');
  }

  trusts(address: string | undefined): boolean {
    return this.#list.has(address);
  }
}

/** The listener's own side: whether it serves TLS, and the host[:port] to use when the request names none usable. */
export interface LocalListener {
  readonly secure: boolean;
  readonly host?: string;
}

/**
 * `scheme://host[:port][/prefix]`, with no trailing slash. Forwarding headers (X-Forwarded-Proto,
 * -Host, -Prefix, and RFC 7239 Forwarded proto= and host=, which win over the X- ones) are read
 * only from a trusted peer, and only their first value: the one the first proxy wrote about the
 * client. Anything that is not a plain scheme, host[:port] or path is dropped, never passed on.
 */
export function publicOrigin(
  headers: IncomingHttpHeaders,
  remoteAddress: string | undefined,
  trusted: TrustedProxies,
  local: LocalListener,
): string {
  const fromProxy = trusted.trusts(remoteAddress);
  const forwarded = fromProxy ? firstForwardedElement(headerText(headers.forwarded)) : {};
  const proto = fromProxy ? validProto(forwarded.proto ?? firstValue(headers['x-forwarded-proto'])) : null;
  const host = (fromProxy ? validHost(forwarded.host ?? firstValue(headers['x-forwarded-host'])) : null) ?? validHost(headers.host);
  const prefix = fromProxy ? validPrefix(firstValue(headers['x-forwarded-prefix'])) : '';

  const scheme = proto ?? (local.secure ? 'https' : 'http');
  const authority = host ?? validHost(local.host) ?? 'localhost';
  // The parts are checked above; URL only normalises them (case, a default port).
  return `${new URL(`${scheme}://${authority}`).origin}${prefix}`;
}

function headerText(value: string | readonly string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : (value as string | undefined);
}

/** A list header's first member: the client's side of the chain. */
function firstValue(value: string | readonly string[] | undefined): string | undefined {
  return headerText(value)?.split(',')[0]?.trim();
}

function validProto(value: string | undefined): 'http' | 'https' | null {
  const proto = value?.toLowerCase();
  return proto === 'http' || proto === 'https' ? proto : null;
}

const REG_NAME = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

/** host[:port], the host a DNS name, an IPv4 address or a bracketed IPv6 one; nothing else. */
function validHost(value: string | undefined): string | null {
  if (value === undefined || value.length === 0 || value.length > 260) return null;
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(value);
  if (match === null) return null;
  const [, name = '', port] = match;
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return null;
  const bracketed = name.startsWith('[');
  if (bracketed ? isIP(name.slice(1, -1)) !== 6 : !REG_NAME.test(name)) return null;
  return value.toLowerCase();
}

/** A path of plain segments; no dot segments, encoded characters, query or fragment. */
function validPrefix(value: string | undefined): string {
  if (value === undefined) return '';
  const trimmed = value.replace(/\/+$/, '');
  if (trimmed === '' || !/^(?:\/[A-Za-z0-9._~-]+)+$/.test(trimmed)) return '';
  return trimmed.split('/').some((segment) => segment === '.' || segment === '..') ? '' : trimmed;
}

/**
 * The proto and host of a Forwarded header's first element (RFC 7239 section 4: elements split by
 * commas, pairs by semicolons, values a token or a quoted string). A malformed element, or one
 * naming a parameter twice (section 4 forbids it), gives nothing.
 */
function firstForwardedElement(value: string | undefined): { proto?: string; host?: string } {
  if (value === undefined) return {};
  const pairs: Record<string, string> = {};
  let i = 0;
  const skipSpace = () => {
    while (value[i] === ' ' || value[i] === '\t') i++;
  };
  for (let guard = 0; guard < 64; guard++) {
    skipSpace();
    const key = /^[!#$%&'*+.^_`|~0-9a-z-]+/i.exec(value.slice(i))?.[0];
    if (key === undefined || value[i + key.length] !== '=') return {};
    i += key.length + 1;
    let parsed: string;
    if (value[i] === '"') {
      parsed = '';
      for (i++; i < value.length && value[i] !== '"'; i++) parsed += value[i] === '\\' ? (value[++i] ?? '') : value[i];
      if (value[i] !== '"') return {};
      i++;
    } else {
      parsed = /^[!#$%&'*+.^_`|~0-9a-z:[\]-]*/i.exec(value.slice(i))?.[0] ?? '';
      i += parsed.length;
    }
    const name = key.toLowerCase();
    if (name in pairs) return {};
    pairs[name] = parsed;
    skipSpace();
    if (i >= value.length || value[i] === ',') break;
    if (value[i] !== ';') return {};
    i++;
  }
  return { ...(pairs.proto === undefined ? {} : { proto: pairs.proto }), ...(pairs.host === undefined ? {} : { host: pairs.host }) };
}
