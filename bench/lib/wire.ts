import { request } from 'undici';
import type { WireHeaders } from './fleet.js';

// What a proxy puts on the wire beyond the body: the headers of its response to the client,
// and the headers of its request to the upstream (as the mock received them). The bench
// reads the gateway's, hands them to a second minimal proxy, and checks that proxy's wire
// matches, so "gateway / minimal proxy with the same headers" compares like with like
// (ADR 0024). Read from a live request every run: when the gateway's headers change, the
// baseline follows, and a mismatch is a problem, not a silent skew.

/** Set by the proxy itself or its HTTP stack on both kinds of proxy alike: not part of the comparison. */
const RESPONSE_COMMON = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive']);
const UPSTREAM_COMMON = new Set(['host', 'connection', 'content-type', 'content-length']);
/** The gateway's own id for the request: a fresh UUID per request, sent on both hops. */
const REQUEST_ID_HEADER = 'x-switchyard-request-id';

export interface ObservedWire {
  /** The extra headers, in order, with the request id replaced by null. */
  readonly wire: WireHeaders;
  /** Names only, in order: what another proxy's wire must match. */
  readonly responseNames: readonly string[];
  readonly upstreamNames: readonly string[];
}

interface MockStatsView {
  readonly recent: readonly { readonly path: string; readonly headers: Record<string, string | string[] | undefined> }[];
}

/** One request through `url`; what it answered with and what the mock behind it received. */
export async function observeWire(url: string, body: string, mockOrigin: string): Promise<ObservedWire | string> {
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await res.body.text();
  if (res.statusCode !== 200) return `${url}: the wire probe answered ${res.statusCode}`;
  const raw = rawPairs(res.headers);
  const requestId = raw.find(([name]) => name === REQUEST_ID_HEADER)?.[1] ?? null;
  const response = raw.filter(([name]) => !RESPONSE_COMMON.has(name)).map(([name, value]) => idOrValue(name, value, requestId));

  const stats = (await (await fetch(`${mockOrigin}/__mock/stats`)).json()) as MockStatsView;
  const last = stats.recent.at(-1);
  if (last === undefined) return `${mockOrigin}: the mock recorded no request for the wire probe`;
  const upstream = Object.entries(last.headers)
    .filter(([name]) => !UPSTREAM_COMMON.has(name))
    .map(([name, value]) => idOrValue(name, Array.isArray(value) ? value.join(', ') : String(value), requestId));
  return {
    wire: { upstream, response },
    responseNames: response.map(([name]) => name),
    upstreamNames: upstream.map(([name]) => name),
  };
}

/** Null when the other proxy's wire has the same header names, in the same order; else what differs. */
export async function compareWire(
  label: string,
  url: string,
  body: string,
  mockOrigin: string,
  expected: ObservedWire,
): Promise<string | null> {
  const seen = await observeWire(url, body, mockOrigin);
  if (typeof seen === 'string') return `${label}: ${seen}`;
  const response = seen.responseNames.join(', ');
  const upstream = seen.upstreamNames.join(', ');
  if (response !== expected.responseNames.join(', '))
    return `${label}: its response headers [${response}] are not the gateway's [${expected.responseNames.join(', ')}]`;
  if (upstream !== expected.upstreamNames.join(', '))
    return `${label}: its upstream request headers [${upstream}] are not the gateway's [${expected.upstreamNames.join(', ')}]`;
  return null;
}

function idOrValue(name: string, value: string, requestId: string | null): readonly [string, string | null] {
  return [name, requestId !== null && value === requestId ? null : value];
}

/** undici's response headers as [name, value] pairs in the order they were received. */
function rawPairs(headers: Record<string, string | string[] | undefined>): [string, string][] {
  return Object.entries(headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value.join(', ') : String(value)]);
}
