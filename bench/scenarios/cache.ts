import { randomUUID } from 'node:crypto';
import { roundsFor } from '../lib/alternation.js';
import {
  CACHED_ROUTE,
  type CacheCounts,
  cacheCounts,
  cacheGatewayConfig,
  cacheRequests,
  checkHitAfterMiss,
  countsSince,
  countsTable,
  dropRedisKeys,
  EMBEDDING_ROUTE,
  redisAnswers,
  SEMANTIC_ROUTE,
  UNCACHED_ROUTE,
} from '../lib/cache-requests.js';
import type { GatewayProcess, MockProcess } from '../lib/fleet.js';
import { failuresOf, type LoadSpec, runLoad } from '../lib/load.js';
import { round } from '../lib/percentiles.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';
import { type CountedLoad, countedLoad, countedStreams } from '../lib/upstream-counted.js';

// What the response cache gives and costs, on one mock. The hit path: one question asked over
// and over of a route with `cache: {mode: exact}`, against the same request sent straight to
// the mock (a hit should be no slower than the cheapest upstream there is). The miss path:
// questions nobody asked before, to the cached route and to the same route without a cache
// (the lookup and the store's write are all a miss adds). Then a streamed hit's time to first
// byte, one at a time, beside the mock's own. Last, semantic hits: every request a new wording
// of a stored question, which the mock embeds as the original (its vectors are bags of words),
// against the route without a cache. The memory store's exact figures are judged; with a
// Redis on 127.0.0.1:6379, a second gateway on the redis store is measured beside it.

const HIT_RATIO_TARGET = 1.0;
const MISS_RATIO_TARGET = 0.95;
const CONNECTIONS = 32;
const STREAMS_PER_HALF = 300;
const REDIS_URL = 'redis://127.0.0.1:6379';
/** Should a run die before it deletes its keys, they expire soon after. */
const REDIS_TTL_S = 120;

type Store = 'memory' | 'redis';
type HitWay = 'direct' | Store;
type MissWay = 'uncached' | Store;
type SemanticWay = 'uncached' | 'semantic';
const HIT_LABELS: Record<HitWay, string> = { direct: 'direct to the mock', memory: 'hit, memory store', redis: 'hit, redis store' };
const MISS_LABELS: Record<MissWay, string> = {
  uncached: 'the route without a cache',
  memory: 'miss, memory store',
  redis: 'miss, redis store',
};
const SEMANTIC_LABELS: Record<SemanticWay, string> = {
  uncached: MISS_LABELS.uncached,
  semantic: 'semantic hit, memory store',
};
const HEADERS = { 'content-type': 'application/json' };
const isFirstToken = (event: string) => /"content":"[^"]/.test(event);

export const cache: Scenario = {
  name: 'cache',
  summary: `exact-cache hits against the mock itself, misses against no cache (req/s at c=${CONNECTIONS}); a streamed hit's time to first byte; semantic hits`,
  estimateS: (d) => 12 + 6 * 1.5 + (3 + 3 + 2) * d + (3 * 2 * STREAMS_PER_HALF) / 400,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const mock = await ctx.fleet.startMock('bench');
    const stores: Store[] = (await redisAnswers()) ? ['memory', 'redis'] : ['memory'];
    if (stores.length === 1) ctx.progress('no Redis on 127.0.0.1:6379: the memory store alone');
    const redisKeyPrefix = `switchyard-bench-${randomUUID()}:`;
    const gateways = {} as Record<Store, GatewayProcess>;
    for (const store of stores)
      gateways[store] = await ctx.fleet.startGateway(
        `cache-${store}`,
        cacheGatewayConfig(mock.baseUrl, store === 'memory' ? null : { url: REDIS_URL, keyPrefix: redisKeyPrefix, ttlS: REDIS_TTL_S }),
        {
          cpuProfileDir: ctx.cpuProfileDir,
        },
      );
    try {
      return await measureAll(ctx, mock, stores, gateways);
    } finally {
      if (stores.includes('redis'))
        await dropRedisKeys(REDIS_URL, redisKeyPrefix).catch((err: unknown) =>
          ctx.progress(`could not delete the run's Redis keys (they expire within ${REDIS_TTL_S} s): ${(err as Error).message}`),
        );
    }
  },
};

async function measureAll(
  ctx: ScenarioContext,
  mock: MockProcess,
  stores: readonly Store[],
  gateways: Record<Store, GatewayProcess>,
): Promise<ScenarioReport> {
  const requests = cacheRequests();
  const problems: string[] = [];

  // Before anything is measured: the first asking is a miss, the second a hit, on every store,
  // streamed too. The measured hits then all find their entry.
  for (const store of stores) {
    for (const [what, body] of [
      ['', requests.repeated(CACHED_ROUTE)],
      ['streamed: ', requests.streamed(CACHED_ROUTE)],
    ] as const) {
      const problem = await checkHitAfterMiss(gateways[store].url, [body, body], mock);
      if (problem !== null) problems.push(`${store} store: ${what}${problem}`);
    }
  }
  // And on the semantic route: the question, then a rewording of it (each lookup embeds once).
  const reworded = [requests.repeated(SEMANTIC_ROUTE), requests.reworded(SEMANTIC_ROUTE)] as const;
  const semanticProblem = await checkHitAfterMiss(gateways.memory.url, reworded, mock, 1);
  if (semanticProblem !== null) problems.push(`memory store, semantic: ${semanticProblem}`);

  const hitWays: HitWay[] = ['direct', ...stores];
  const missWays: MissWay[] = ['uncached', ...stores];
  const hitSpec = (way: HitWay, durationS: number): LoadSpec => ({
    url: way === 'direct' ? `${mock.baseUrl}/chat/completions` : `${gateways[way].url}/v1/chat/completions`,
    body: requests.repeated(CACHED_ROUTE),
    connections: CONNECTIONS,
    durationS,
  });
  // The route without a cache is the memory gateway's: its misses and its plain requests share a process.
  const gatewayOf = (way: MissWay) => gateways[way === 'uncached' ? 'memory' : way];
  const missSpec = (way: MissWay, durationS: number): LoadSpec => {
    const route = way === 'uncached' ? UNCACHED_ROUTE : CACHED_ROUTE;
    return {
      url: `${gatewayOf(way).url}/v1/chat/completions`,
      body: '',
      bodyFor: () => requests.fresh(route),
      connections: CONNECTIONS,
      durationS,
    };
  };

  const semanticWays: SemanticWay[] = ['uncached', 'semantic'];
  const semanticSpec = (way: SemanticWay, durationS: number): LoadSpec => ({
    url: `${gateways.memory.url}/v1/chat/completions`,
    body: '',
    bodyFor: way === 'uncached' ? () => requests.fresh(UNCACHED_ROUTE) : () => requests.reworded(SEMANTIC_ROUTE),
    connections: CONNECTIONS,
    durationS,
  });

  ctx.progress(`warm-up: ${ctx.warmupS} s per way at c=${CONNECTIONS}`);
  for (const way of hitWays) await runLoad(hitSpec(way, ctx.warmupS));
  for (const way of missWays) await runLoad(missSpec(way, ctx.warmupS));
  await runLoad(semanticSpec('semantic', ctx.warmupS));

  // What each gateway's cache made of each phase's requests, from its own counters.
  const counts: Record<string, Partial<Record<Store, CacheCounts>>> = {};
  const counted = async <T>(phase: string, work: () => Promise<T>, route = CACHED_ROUTE, on: readonly Store[] = stores): Promise<T> => {
    const before = await Promise.all(on.map((s) => cacheCounts(gateways[s].url, route)));
    const result = await work();
    const after = await Promise.all(on.map((s) => cacheCounts(gateways[s].url, route)));
    counts[phase] = Object.fromEntries(on.map((s, i) => [s, countsSince(before[i] as CacheCounts, after[i] as CacheCounts)]));
    return result;
  };
  const lookupErrors = (phase: string, store: Store) => counts[phase]?.[store]?.lookups.error ?? 0;

  const rounds = roundsFor(ctx.durationS);
  const slice = ctx.durationS / rounds;
  ctx.progress(`hits, c=${CONNECTIONS}: ${hitWays.length} ways x ${rounds} slices of ${slice} s, order A-B-C-C-B-A-…`);
  const hits = await counted('hits', () =>
    countedLoad(
      hitWays,
      (w) => hitSpec(w, slice),
      (w) => (w === 'direct' ? mock.pid : gateways[w].pid),
      mock,
      rounds,
    ),
  );
  ctx.progress(`misses, c=${CONNECTIONS}: ${missWays.length} ways x ${rounds} slices of ${slice} s`);
  const misses = await counted('misses', () =>
    countedLoad(
      missWays,
      (w) => missSpec(w, slice),
      (w) => gatewayOf(w).pid,
      mock,
      rounds,
    ),
  );
  ctx.progress(`streamed, one at a time: time to first byte, ${STREAMS_PER_HALF} streams per way and half`);
  const streamed = await counted('streamed', () =>
    countedStreams(
      hitWays,
      (w) => (w === 'direct' ? new URL(mock.baseUrl).origin : gateways[w].url),
      { path: '/v1/chat/completions', headers: HEADERS, body: requests.streamed(CACHED_ROUTE), isFirstToken },
      mock,
      STREAMS_PER_HALF,
    ),
  );
  ctx.progress(`semantic hits, c=${CONNECTIONS}: ${semanticWays.length} ways x ${rounds} slices of ${slice} s`);
  const semantic = await counted(
    'semantic',
    () =>
      countedLoad(
        semanticWays,
        (w) => semanticSpec(w, slice),
        () => gateways.memory.pid,
        mock,
        rounds,
      ),
    SEMANTIC_ROUTE,
    ['memory'],
  );

  for (const way of hitWays) {
    const problem = failuresOf(HIT_LABELS[way], hits[way].load);
    if (problem !== null) problems.push(problem);
    if (streamed[way].failures > 0) problems.push(`${HIT_LABELS[way]}, streamed: ${streamed[way].failures} failed streams`);
    if (way === 'direct') continue;
    // A lookup slower than lookup_timeout_ms is answered as a miss by design; any other hit that went upstream is a fault.
    for (const [phase, upstream] of [
      ['hits', hits[way].upstream_requests],
      ['streamed', streamed[way].upstream_requests],
    ] as const) {
      if (upstream > lookupErrors(phase, way))
        problems.push(`${HIT_LABELS[way]}, ${phase}: ${upstream} requests reached the mock, ${lookupErrors(phase, way)} lookups failed`);
    }
  }
  for (const way of missWays) {
    const m = misses[way];
    const problem = failuresOf(MISS_LABELS[way], m.load);
    if (problem !== null) problems.push(problem);
    if (m.upstream_requests < m.load.ok)
      problems.push(`${MISS_LABELS[way]}: only ${m.upstream_requests} of ${m.load.ok} answers came from the mock`);
  }

  for (const way of semanticWays) {
    const problem = failuresOf(SEMANTIC_LABELS[way], semantic[way].load);
    if (problem !== null) problems.push(problem);
  }
  const semanticHits = counts.semantic?.memory?.lookups.hit ?? 0;
  if (semanticHits < semantic.semantic.load.ok)
    problems.push(`${SEMANTIC_LABELS.semantic}: ${semanticHits} hits for ${semantic.semantic.load.ok} answers`);

  const hitRatio = (w: HitWay) => round(hits[w].load.req_per_s / hits.direct.load.req_per_s, 3);
  const missRatio = (w: MissWay) => round(misses[w].load.req_per_s / misses.uncached.load.req_per_s, 3);
  const semanticRatio = (w: SemanticWay) => round(semantic[w].load.req_per_s / semantic.uncached.load.req_per_s, 3);
  const targets = [
    checkTarget(
      `hit throughput, exact hit (memory store) / direct to the mock, c=${CONNECTIONS}`,
      hitRatio('memory'),
      '>=',
      HIT_RATIO_TARGET,
      '',
    ),
    checkTarget(
      `miss throughput, cached route missing (memory store) / the route without a cache, c=${CONNECTIONS}`,
      missRatio('memory'),
      '>=',
      MISS_RATIO_TARGET,
      '',
    ),
  ];
  const tables = [
    renderTable(
      `hits: one question asked over and over, non-streamed, c=${CONNECTIONS} (ms; cpu: the answering process's µs per request, the mock's for direct; upstream: requests that reached the mock)`,
      ['way', 'req/s', '/direct', 'cpu µs/req', 'p50', 'p99', '2xx', 'failed', 'upstream'],
      hitWays.map((w) => row(HIT_LABELS[w], hits[w], hitRatio(w))),
    ),
    renderTable(
      `misses: a new question every request, non-streamed, c=${CONNECTIONS} (ms; cpu: the gateway's µs per request)`,
      ['way', 'req/s', '/no cache', 'cpu µs/req', 'p50', 'p99', '2xx', 'failed', 'upstream'],
      missWays.map((w) => row(MISS_LABELS[w], misses[w], missRatio(w))),
    ),
    renderTable(
      'streamed hits, one at a time on one connection: time to first byte and to the first text (ms)',
      ['way', 'streams', 'ttfb p50', 'ttfb p90', 'ttfb p99', 'first text p50', 'upstream'],
      hitWays.map((w) => {
        const s = streamed[w];
        const b = s.first_byte_ms;
        return [HIT_LABELS[w], b.count, b.p50Ms, b.p90Ms, b.p99Ms, s.first_token_ms.p50Ms, s.upstream_requests];
      }),
    ),
    renderTable(
      `semantic hits: each request a new wording of a stored question (the same words reordered and recased), embedded by the route ${EMBEDDING_ROUTE} on the mock, c=${CONNECTIONS} (ms; cpu: the gateway's µs per request; upstream: requests that reached the mock, embeddings included)`,
      ['way', 'req/s', '/no cache', 'cpu µs/req', 'p50', 'p99', '2xx', 'failed', 'upstream'],
      semanticWays.map((w) => row(SEMANTIC_LABELS[w], semantic[w], semanticRatio(w))),
    ),
    countsTable(counts, stores),
  ];
  return {
    figures: {
      connections: CONNECTIONS,
      stores,
      hits,
      misses,
      streamed,
      semantic,
      cache_counts: counts,
      hit_ratio: Object.fromEntries(stores.map((s) => [s, hitRatio(s)])),
      miss_ratio: Object.fromEntries(stores.map((s) => [s, missRatio(s)])),
      semantic_hit_ratio: semanticRatio('semantic'),
    },
    targets,
    tables,
    problems,
  };
}

function row(label: string, m: CountedLoad, ratio: number): Array<string | number | null> {
  const f = m.load;
  return [
    label,
    f.req_per_s,
    ratio,
    m.cpu_us_per_request,
    f.latency_ms.p50Ms,
    f.latency_ms.p99Ms,
    f.ok,
    f.errors + f.non2xx,
    m.upstream_requests,
  ];
}
