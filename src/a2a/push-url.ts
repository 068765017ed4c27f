// Which webhook URLs a caller may ask an agent, through the gateway, to POST task updates to.
// The agent usually sits inside the gateway's network, so a push URL is a request forgery
// vector: it must not reach loopback, private, link-local (cloud metadata at 169.254.169.254)
// or otherwise non-global addresses, unless an operator listed its prefix.

import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isPublicAddress } from '../providers/index.js';

export type PushUrlCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

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
