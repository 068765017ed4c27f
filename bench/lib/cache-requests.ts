import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import type { MockProcess } from './fleet.js';
import { gatewayConfig, mockProvider } from './gateway-config.js';
import { renderTable } from './table.js';

// The cache scenario's gateways, the requests it sends them, and the checks that a cached
// route answers them as it should. Every prompt carries the run's nonce, so an entry left in a
// shared store (Redis) by an earlier run is never what this run measures. Whether an answer
// came from the cache is read off the mock (a hit never reaches it, a miss always does) and
// off the gateway's own counters (a lookup that timed out is a miss by design).

export const CACHED_ROUTE = 'cached';
export const UNCACHED_ROUTE = 'uncached';
/** A route with `cache: {mode: semantic}`, whose turns EMBEDDING_ROUTE embeds. */
export const SEMANTIC_ROUTE = 'semantic';
export const EMBEDDING_ROUTE = 'embed';
const HEADERS = { 'content-type': 'application/json' };

/**
 * A gateway over the mock with the four routes: `redis` null for the memory store, else the
 * Redis, the key prefix its entries go under (the governance store's, which the cache uses)
 * and the exact route's entries' lifetime.
 */
export function cacheGatewayConfig(
  mockBaseUrl: string,
  redis: { readonly url: string; readonly keyPrefix: string; readonly ttlS: number } | null,
): Record<string, unknown> {
  const candidates = [{ provider: 'bench' }];
  return {
    ...gatewayConfig({
      providers: { bench: mockProvider(mockBaseUrl) },
      routes: {
        [CACHED_ROUTE]: { candidates, cache: { mode: 'exact', ...(redis === null ? {} : { ttl_s: redis.ttlS }) } },
        [UNCACHED_ROUTE]: { candidates },
        [SEMANTIC_ROUTE]: { candidates, cache: { mode: 'semantic', semantic: { embedding_route: EMBEDDING_ROUTE } } },
        [EMBEDDING_ROUTE]: { candidates },
      },
    }),
    ...(redis === null
      ? { cache: { store: 'memory' } }
      : { cache: { store: 'redis', redis_url: redis.url }, governance: { key_prefix: redis.keyPrefix } }),
  };
}

/** The request bodies of one run. */
export interface CacheRequests {
  /** The one question asked over and over: a hit after the first. */
  repeated(model: string): string;
  /** The same question streamed. */
  streamed(model: string): string;
  /** A question nobody asked before, from a counter shared by every route. */
  fresh(model: string): string;
  /**
   * `repeated`'s question in words no request used before: the same words reordered and
   * recased, which the mock embeds to the same vector (a semantic hit, never an exact one).
   */
  reworded(model: string): string;
}

export function cacheRequests(): CacheRequests {
  const nonce = randomUUID().slice(0, 8);
  let asked = 0;
  let reworded = 0;
  const words = ['what', 'is', 'the', 'capital', 'of', 'france', 'run', nonce];
  const body = (model: string, content: string, stream: boolean) =>
    JSON.stringify({ model, ...(stream ? { stream: true } : {}), messages: [{ role: 'user', content }] });
  return {
    repeated: (model) => body(model, `What is the capital of France? (run ${nonce})`, false),
    streamed: (model) => body(model, `What is the capital of Italy? (run ${nonce})`, true),
    fresh: (model) => body(model, `Question ${++asked} of run ${nonce}: what is ${asked} squared?`, false),
    reworded: (model) => body(model, `${wording(words, ++reworded).join(' ')}?`, false),
  };
}

/** The `n`th wording of `words`: a permutation (its Lehmer code is n), then a case per word (n's higher digits). */
function wording(words: readonly string[], n: number): string[] {
  const pool = [...words];
  const out: string[] = [];
  let rest = n;
  for (let left = pool.length; left > 0; left--) {
    const [word] = pool.splice(rest % left, 1);
    rest = Math.floor(rest / left);
    out.push(word as string);
  }
  return out.map((w, i) => (Math.floor(rest / 2 ** i) % 2 === 1 ? w.toUpperCase() : w));
}

/**
 * Null when `first`, then `second`, sent to a gateway's cached route are a miss that reaches
 * the mock and then a hit that does not (bar the embedding of each lookup, `embeds` 1 for a
 * semantic route); else what went wrong. Streamed bodies are read to their end.
 */
export async function checkHitAfterMiss(
  gatewayUrl: string,
  [first, second]: readonly [string, string],
  mock: MockProcess,
  embeds = 0,
): Promise<string | null> {
  const url = `${gatewayUrl}/v1/chat/completions`;
  const seen: string[] = [];
  for (const [expected, body] of [
    ['miss', first],
    ['hit', second],
  ] as const) {
    const before = await mock.total();
    const res = await fetch(url, { method: 'POST', headers: HEADERS, body });
    const text = await res.text();
    if (res.status !== 200) return `the ${expected} answered ${res.status}: ${text.slice(0, 300)}`;
    const upstream = (await mock.total()) - before;
    const header = res.headers.get('x-switchyard-cache');
    seen.push(`${header ?? 'no x-switchyard-cache'} (${upstream} upstream)`);
    if (header !== expected || upstream !== (expected === 'miss' ? 1 : 0) + embeds)
      return `asked twice, the cached route answered ${seen.join(', then ')}: expected a miss, then a hit that stays off the mock`;
  }
  return null;
}

/** Whether a Redis answers PING on `port` of 127.0.0.1 within `timeoutMs`. */
export function redisAnswers(port = 6379, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (up: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(up);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (chunk) => done(chunk.toString('latin1').startsWith('+PONG')));
    socket.once('error', () => done(false));
  });
}

/** Deletes every key under `prefix`: what a run's gateways left in Redis. */
export async function dropRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A gateway's response-cache counters, from its /metrics: lookups on one route by result, store failures by operation. */
export interface CacheCounts {
  readonly lookups: Readonly<Record<string, number>>;
  readonly errors: Readonly<Record<string, number>>;
}

export async function cacheCounts(gatewayUrl: string, route: string): Promise<CacheCounts> {
  const text = await (await fetch(`${gatewayUrl}/metrics`)).text();
  const lookups: Record<string, number> = {};
  const errors: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^(switchyard_cache_lookups_total|switchyard_cache_errors_total)\{([^}]*)\} (\S+)$/.exec(line);
    if (m === null) continue;
    const labels = Object.fromEntries([...(m[2] as string).matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (m[1] === 'switchyard_cache_errors_total') errors[labels.operation ?? '?'] = Number(m[3]);
    else if (labels.route === route) lookups[labels.result ?? '?'] = Number(m[3]);
  }
  return { lookups, errors };
}

/** What happened between two readings of the same gateway's counters (zeros left out). */
export function countsSince(before: CacheCounts, after: CacheCounts): CacheCounts {
  const since = (a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>) =>
    Object.fromEntries(Object.entries(a).flatMap(([k, v]) => (v - (b[k] ?? 0) === 0 ? [] : [[k, v - (b[k] ?? 0)]])));
  return { lookups: since(after.lookups, before.lookups), errors: since(after.errors, before.errors) };
}

/** Per phase and store read, what the gateways' counters say their caches made of the requests. */
export function countsTable(counts: Readonly<Record<string, Partial<Record<string, CacheCounts>>>>, stores: readonly string[]): string {
  return renderTable(
    "what each gateway's cache made of each phase (its switchyard_cache_lookups_total on the phase's route, and switchyard_cache_errors_total)",
    ['phase', 'store', 'hit', 'miss', 'error', 'other', 'store errors'],
    Object.entries(counts).flatMap(([phase, byStore]) =>
      stores.flatMap((store) => {
        const read = byStore[store];
        if (read === undefined) return [];
        const { lookups, errors } = read;
        const { hit = 0, miss = 0, error = 0, ...other } = lookups;
        const rest = Object.entries(other).map(([k, v]) => `${k} ${v}`);
        const failed = Object.entries(errors).map(([k, v]) => `${k} ${v}`);
        return [[phase, store, hit, miss, error, rest.join(', ') || '-', failed.join(', ') || '-']];
      }),
    ),
  );
}
