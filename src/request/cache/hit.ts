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

/** Answers `r` from `entry`; `done` once, after the answer is written (or with the refusal). */
export function serveHit(r: RoutedRequest, entry: CacheEntry, similarity: number | null, done: (err: unknown) => void): void {
  let limits: ReturnType<typeof admitCached>;
  try {
    limits = admitCached(r.x, r.svc, r.request);
  } catch (err) {
    done(err);
    return;
  }
  if (limits instanceof Promise) limits.then((l) => write(r, entry, similarity, l, done), done);
  else write(r, entry, similarity, limits, done);
}

function write(
  r: RoutedRequest,
  entry: CacheEntry,
  similarity: number | null,
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
  const fresh = freshIds();
  try {
    if (request.stream) {
      const includeUsage = (request.parsed.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
      const events = replayEvents(entry, fresh, { includeUsage });
      headers.push('content-type', 'text/event-stream; charset=utf-8', 'cache-control', 'no-cache');
      res.writeHead(200, headers);
      x.servedFromCache(events.length);
      // One write per event: each reaches the client as a chunk of its own.
      for (const event of events) res.write(event);
      res.end();
    } else {
      const body = replayWhole(entry, fresh);
      headers.push('content-type', 'application/json', 'content-length', String(Buffer.byteLength(body)));
      res.writeHead(200, headers);
      x.servedFromCache(0);
      res.end(body);
    }
  } catch (err) {
    done(err);
    return;
  }
  done(null);
}
