import type { IncomingMessage } from 'node:http';
import { SwitchyardError } from '../../errors.js';

// What the client says about the cache, in its request's headers: `Cache-Control`
// (`no-store`: neither looked up nor stored; `no-cache`: not looked up, and the answer
// replaces the entry; `max-age=N`: only an entry at most N seconds old is served),
// `x-switchyard-cache-ttl` (how long the answer is kept, at most the route's ttl_s) and
// `x-switchyard-cache-namespace` (a namespace within the caller's scope). A malformed one
// is the client's 400, naming the header.

const TTL_HEADER = 'x-switchyard-cache-ttl';
const NAMESPACE_HEADER = 'x-switchyard-cache-namespace';

export interface CacheControls {
  readonly noStore: boolean;
  readonly noCache: boolean;
  /** Seconds; null = any age. */
  readonly maxAgeS: number | null;
  /** Seconds; null = the route's. */
  readonly ttlS: number | null;
  readonly namespace: string | null;
}

const NONE: CacheControls = Object.freeze({ noStore: false, noCache: false, maxAgeS: null, ttlS: null, namespace: null });
const NAMESPACE = /^[A-Za-z0-9._:/-]{1,128}$/;
const SECONDS = /^\d{1,9}$/;

export function controlsOf(req: IncomingMessage): CacheControls {
  const control = req.headers['cache-control'];
  const ttl = req.headers[TTL_HEADER];
  const namespace = req.headers[NAMESPACE_HEADER];
  if (control === undefined && ttl === undefined && namespace === undefined) return NONE;
  let noStore = false;
  let noCache = false;
  let maxAgeS: number | null = null;
  if (control !== undefined) {
    for (const raw of control.split(',')) {
      const directive = raw.trim().toLowerCase();
      if (directive === 'no-store') noStore = true;
      else if (directive === 'no-cache') noCache = true;
      else if (directive.startsWith('max-age=')) {
        const value = directive.slice('max-age='.length).replace(/^"(.*)"$/, '$1');
        if (!SECONDS.test(value)) throw badHeader('cache-control', 'max-age must be a whole number of seconds');
        maxAgeS = Number(value);
      }
      // Other directives (private, no-transform, …) say nothing to this cache.
    }
  }
  let ttlS: number | null = null;
  if (ttl !== undefined) {
    const value = Array.isArray(ttl) ? ttl[0] : ttl;
    if (value === undefined || !SECONDS.test(value.trim()) || Number(value) < 1)
      throw badHeader(TTL_HEADER, 'must be a whole number of seconds, at least 1');
    ttlS = Number(value);
  }
  let ns: string | null = null;
  if (namespace !== undefined) {
    const value = Array.isArray(namespace) ? namespace[0] : namespace;
    if (value === undefined || !NAMESPACE.test(value)) throw badHeader(NAMESPACE_HEADER, 'must be 1-128 of A-Z a-z 0-9 . _ : / -');
    ns = value;
  }
  return { noStore, noCache, maxAgeS, ttlS, namespace: ns };
}

function badHeader(name: string, why: string): SwitchyardError {
  return new SwitchyardError('invalid_request', `header ${name}: ${why}`, name);
}
