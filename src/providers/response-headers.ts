import { headerName, isRateLimitName, passedName } from './raw-headers.js';

/**
 * The gateway's part of the client's response headers if an attempt commits, as flat lists
 * of names and values (`[name, value, name, value, …]`), the form Node's writeHead takes
 * without building an object.
 */
export interface ClientHeaders {
  /** What is the same for every request a candidate serves (built once per generation). */
  readonly attribution: readonly string[];
  /** This request's own: its id, the fallback, gateway limits. */
  readonly own: readonly string[];
  /** Upstream response headers the client gets beyond the default allow-list (the provider's expose_headers). */
  readonly expose?: ReadonlySet<string> | null;
  /** A gateway limit's headers are in `own`: the provider's rate-limit headers are then left out. */
  readonly limitsReplaced?: boolean;
}

/**
 * The client's headers, as a flat list for writeHead: the allowed upstream ones
 * (PASSED_HEADERS, the rate-limit headers unless a gateway limit replaced them, the
 * provider's expose_headers), then the gateway's own, then `extra` (a cost, say). Built
 * once per response; none of the gateway's names can also come from upstream (expose_headers
 * refuses x-switchyard-* names, and upstream rate-limit headers are left out when the
 * gateway sends its own). A translated body (`ownType`) gets its own content type.
 */
export function responseHeaders(
  upstream: readonly Buffer[],
  client: ClientHeaders,
  extra: Readonly<Record<string, string>> | null,
  ownType = false,
): string[] {
  const out: string[] = [];
  const expose = client.expose;
  const rateLimits = client.limitsReplaced !== true;
  const exposing = expose !== undefined && expose !== null && expose.size > 0;
  // Names are matched as bytes; only one that passes becomes a string (raw-headers.ts).
  // A name sent twice is passed twice: writeHead's flat list keeps repeats.
  for (let i = 0; i < upstream.length; i += 2) {
    const raw = upstream[i] as Buffer;
    let name = passedName(raw);
    if (name === null) {
      if (rateLimits && isRateLimitName(raw)) name = headerName(raw);
      else if (exposing) {
        const named = headerName(raw);
        if (expose.has(named)) name = named;
      }
    }
    if (name === null || (ownType && name === 'content-type')) continue;
    out.push(name, (upstream[i + 1] as Buffer).toString('latin1'));
  }
  for (const v of client.attribution) out.push(v);
  for (const v of client.own) out.push(v);
  if (extra !== null) for (const name in extra) out.push(name, extra[name] as string);
  return out;
}
