import { type CacheEntry, freshIds, replayEvents, replayWhole } from '../../cache/index.js';
import { admitCached } from '../admission.js';
import type { RoutedRequest } from '../stage.js';
import { outcome } from './outcome.js';

// A hit: the answer comes from the entry, and no upstream is called. It is admitted by the
// allow-lists and rpm alone (admission.ts: it reserves nothing, costs nothing), and written
// in the client's protocol: a whole answer as one body, a stream as the entry's events, one
// chunk each, at once (the timing of the original stream is not kept), with fresh ids and
// `created` stamps. A stream entry asked for whole, or a whole entry asked for as a stream,
// is built from the other through the canonical form (cache/replay.ts). The headers name
// the candidate that made the entry, as its own answer's did, and say it was a hit.

/** A hit's answer, built before anything is written: a whole body, or the events of a stream. */
type Replayed = { readonly body: string } | { readonly events: readonly string[] };

/**
 * Answers `r` from `entry`; `done` once, after the answer is written (or with the refusal).
 * Returns false, having done nothing, when the entry cannot be replayed (a record this
 * version cannot read): the caller goes on as on a miss.
 */
export function serveHit(r: RoutedRequest, entry: CacheEntry, similarity: number | null, done: (err: unknown) => void): boolean {
  const request = r.request;
  let replayed: Replayed;
  try {
    replayed = request.stream
      ? { events: replayEvents(entry, freshIds(), { includeUsage: includesUsage(request.parsed) }) }
      : { body: replayWhole(entry, freshIds()) };
  } catch (err) {
    if (err instanceof TypeError) return false;
    throw err;
  }
  let limits: ReturnType<typeof admitCached>;
  try {
    limits = admitCached(r.x, r.svc, request);
  } catch (err) {
    done(err);
    return true;
  }
  if (limits instanceof Promise) limits.then((l) => write(r, entry, similarity, replayed, l, done), done);
  else write(r, entry, similarity, replayed, limits, done);
  return true;
}

function includesUsage(parsed: Record<string, unknown>): boolean {
  return (parsed.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
}

function write(
  r: RoutedRequest,
  entry: CacheEntry,
  similarity: number | null,
  replayed: Replayed,
  limits: readonly string[],
  done: (err: unknown) => void,
): void {
  const { x, request } = r;
  const res = x.res;
  const ageS = Math.max(0, Math.floor((Date.now() - entry.createdAtMs) / 1000));
  const o = entry.origin;
  const headers: string[] = [
    'x-switchyard-request-id',
    x.requestId,
    'x-switchyard-provider',
    o.provider,
    'x-switchyard-model',
    o.model,
    'x-switchyard-candidate',
    o.candidate,
    'x-switchyard-generation',
    String(request.gen.number),
    'x-switchyard-topology',
    request.gen.digest,
    'x-switchyard-cache',
    'hit',
    'x-switchyard-cache-key',
    entry.key,
    'age',
    String(ageS),
    'x-switchyard-cost-usd',
    '0.000000',
  ];
  if (similarity !== null) headers.push('x-switchyard-cache-similarity', similarity.toFixed(4));
  for (const v of limits) headers.push(v);
  x.cacheLooked(outcome('hit', request.model, entry.key, { similarity, savedMicroUsd: entry.costMicroUsd, origin: entry.origin }));
  try {
    if ('events' in replayed) {
      headers.push('content-type', 'text/event-stream; charset=utf-8', 'cache-control', 'no-cache');
      res.writeHead(200, headers);
      x.servedFromCache(replayed.events.length);
      // One write per event: each reaches the client as a chunk of its own.
      for (const event of replayed.events) res.write(event);
      res.end();
    } else {
      headers.push('content-type', 'application/json', 'content-length', String(Buffer.byteLength(replayed.body)));
      res.writeHead(200, headers);
      x.servedFromCache(0);
      res.end(replayed.body);
    }
  } catch (err) {
    done(err);
    return;
  }
  done(null);
}
