import type { CacheStats, Metrics, Span } from '../telemetry/index.js';
import type { RecordSink } from './record.js';
import type { CacheOutcome, RequestRecord } from './request-record.js';

// What the sinks make of a record's response-cache outcome. Label values stay bounded: the
// route is a label only when the request's generation routes it (as a model is, see
// RequestRecord.routedModel), the result is a closed set, and a team comes from the keyring.

/** The route as a label: the lookup's route when its generation routes it, else `none`. */
export function cacheRoute(r: RequestRecord, cache: CacheOutcome): string {
  return r.gen !== null && r.gen.routes[cache.route] !== undefined ? cache.route : 'none';
}

/** What a hit saved, in micro-USD (0 for anything but a priced hit). */
export function savedMicroUsd(cache: CacheOutcome | null): number {
  return cache !== null && cache.result === 'hit' ? (cache.savedMicroUsd ?? 0) : 0;
}

/**
 * `switchyard_cache_lookups_total`, `switchyard_cache_saved_usd_total` and
 * `switchyard_cache_similarity`. A hit counts in `switchyard_requests_total` as any request
 * does, under provider `none`: no provider was called (the ledger row names the one that
 * made the entry).
 */
export function countCache(metrics: Metrics, r: RequestRecord): void {
  const cache = r.cache;
  if (cache === null) return;
  metrics.cacheLookups.series(cacheRoute(r, cache), cache.result).inc();
  const saved = savedMicroUsd(cache);
  if (saved > 0) metrics.cacheSavedUsd.series(r.principal?.team ?? 'none').inc(saved / 1e6);
  if (cache.similarity !== null) metrics.cacheSimilarity.observe(cache.similarity);
}

/** Each route's and team's lookups by result, the answers stored and the money hits saved, since start: /admin/status and the status page. */
export function cacheStatsSink(stats: CacheStats): RecordSink {
  return {
    name: 'cache',
    write(r) {
      const cache = r.cache;
      if (cache !== null)
        stats.record(cacheRoute(r, cache), r.principal?.team ?? 'none', cache.result, savedMicroUsd(cache), r.cacheStoredAnswer);
    },
  };
}

/**
 * `,"cache":"miss","cache_key":"…","cache_stored":true`: the lookup's result, its key's digest
 * when there was one, and whether the answer was kept; nothing when the route has no cache.
 */
export function cacheMembers(r: RequestRecord): string {
  const cache = r.cache;
  if (cache === null) return '';
  const key = cache.key === null ? '' : `,"cache_key":${JSON.stringify(cache.key)}`;
  return `,"cache":"${cache.result}"${key}${r.cacheStoredAnswer ? ',"cache_stored":true' : ''}`;
}

/** The lookup's result and key on the request's span; nothing when the route has no cache. */
export function cacheAttributes(span: Span, r: RequestRecord): void {
  const cache = r.cache;
  if (cache === null) return;
  span.setAttribute('switchyard.cache.result', cache.result);
  if (cache.key !== null) span.setAttribute('switchyard.cache.key', cache.key);
}
