import { randomUUID } from 'node:crypto';
import { alternate, roundsFor } from '../lib/alternation.js';
import {
  CACHED_ROUTE,
  type CacheRequests,
  cacheRequests,
  checkHitAfterMiss,
  dropRedisKeys,
  redisAnswers,
  UNCACHED_ROUTE,
} from '../lib/cache-requests.js';
import type { GatewayProcess, MockProcess } from '../lib/fleet.js';
import { gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, type LoadSpec, loadFigures, runLoad } from '../lib/load.js';
import { type LatencySummary, round, summarizeLatency } from '../lib/percentiles.js';
import { cpuUsedDuring } from '../lib/proc-cpu.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { runFirstTokens } from '../lib/sequential.js';
import { renderTable } from '../lib/table.js';

// What the response cache gives and costs, on one mock. The hit path: one question asked over
// and over of a route with `cache: {mode: exact}`, against the same request sent straight to
// the mock (a hit should be no slower than the cheapest upstream there is). The miss path:
// questions nobody asked before, to the cached route and to the same route without a cache
// (the lookup and the store's write are all a miss adds). Then a streamed hit's time to first
// byte, one at a time, beside the mock's own. The memory store's figures are judged; with a
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
const HIT_LABELS: Record<HitWay, string> = { direct: 'direct to the mock', memory: 'hit, memory store', redis: 'hit, redis store' };
const MISS_LABELS: Record<MissWay, string> = {
  uncached: 'the route without a cache',
  memory: 'miss, memory store',
  redis: 'miss, redis store',
};
const HEADERS = { 'content-type': 'application/json' };
const isFirstToken = (event: string) => /"content":"[^"]/.test(event);

/** One way's slices: its load, the CPU of the process that answered, and the requests that reached the mock. */
interface Measured {
  readonly load: LoadFigures;
  readonly cpu_us_per_request: number | null;
  readonly upstream_requests: number;
}

interface FirstBytes {
  readonly failures: number;
  readonly upstream_requests: number;
  readonly first_byte_ms: LatencySummary;
  readonly first_token_ms: LatencySummary;
}

function cacheConfig(mockBaseUrl: string, store: Store, redisKeyPrefix: string): Record<string, unknown> {
  const candidates = [{ provider: 'bench' }];
  return {
    ...gatewayConfig({
      providers: { bench: mockProvider(mockBaseUrl) },
      routes: {
        [CACHED_ROUTE]: { candidates, cache: { mode: 'exact', ...(store === 'redis' ? { ttl_s: REDIS_TTL_S } : {}) } },
        [UNCACHED_ROUTE]: { candidates },
      },
    }),
    // The cache's keys go under the governance store's prefix, here one of this run's own.
    ...(store === 'memory' ? { cache: { store } } : { cache: { store, redis_url: REDIS_URL }, governance: { key_prefix: redisKeyPrefix } }),
  };
}

export const cache: Scenario = {
  name: 'cache',
  summary: `exact-cache hits against the mock itself, misses against no cache (req/s at c=${CONNECTIONS}); a streamed hit's time to first byte`,
  estimateS: (d) => 10 + 5 * 1.5 + 2 * 1.5 * d + (3 * 2 * STREAMS_PER_HALF) / 400,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const mock = await ctx.fleet.startMock('bench');
    const stores: Store[] = (await redisAnswers()) ? ['memory', 'redis'] : ['memory'];
    if (stores.length === 1) ctx.progress('no Redis on 127.0.0.1:6379: the memory store alone');
    const redisKeyPrefix = `switchyard-bench-${randomUUID()}:`;
    const gateways = {} as Record<Store, GatewayProcess>;
    for (const store of stores)
      gateways[store] = await ctx.fleet.startGateway(`cache-${store}`, cacheConfig(mock.baseUrl, store, redisKeyPrefix), {
        cpuProfileDir: ctx.cpuProfileDir,
      });
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
      const problem = await checkHitAfterMiss(gateways[store].url, body, mock);
      if (problem !== null) problems.push(`${store} store: ${what}${problem}`);
    }
  }

  const hitWays: HitWay[] = ['direct', ...stores];
  const missWays: MissWay[] = ['uncached', ...stores];
  const hitSpec = (way: HitWay, durationS: number): LoadSpec =>
    way === 'direct'
      ? { url: `${mock.baseUrl}/chat/completions`, body: requests.repeated(CACHED_ROUTE), connections: CONNECTIONS, durationS }
      : { url: `${gateways[way].url}/v1/chat/completions`, body: requests.repeated(CACHED_ROUTE), connections: CONNECTIONS, durationS };
  const missSpec = (way: MissWay, durationS: number): LoadSpec => {
    const gw = gateways[way === 'uncached' ? 'memory' : way];
    const route = way === 'uncached' ? UNCACHED_ROUTE : CACHED_ROUTE;
    return { url: `${gw.url}/v1/chat/completions`, body: '', bodyFor: () => requests.fresh(route), connections: CONNECTIONS, durationS };
  };
  const servingPid = (way: HitWay | MissWay) => (way === 'direct' ? mock.pid : gateways[way === 'uncached' ? 'memory' : way].pid);

  ctx.progress(`warm-up: ${ctx.warmupS} s per way at c=${CONNECTIONS}`);
  for (const way of hitWays) await runLoad(hitSpec(way, ctx.warmupS));
  for (const way of missWays) await runLoad(missSpec(way, ctx.warmupS));

  const rounds = roundsFor(ctx.durationS);
  ctx.progress(`hits, c=${CONNECTIONS}: ${hitWays.length} ways x ${rounds} slices of ${ctx.durationS / rounds} s, order A-B-C-C-B-A-…`);
  const hits = await measure(hitWays, (w) => hitSpec(w, ctx.durationS / rounds), servingPid, mock, rounds);
  ctx.progress(`misses, c=${CONNECTIONS}: ${missWays.length} ways x ${rounds} slices of ${ctx.durationS / rounds} s`);
  const misses = await measure(missWays, (w) => missSpec(w, ctx.durationS / rounds), servingPid, mock, rounds);
  for (const way of hitWays) {
    const m = hits[way];
    const problem = failuresOf(HIT_LABELS[way], m.load);
    if (problem !== null) problems.push(problem);
    if (way !== 'direct' && m.upstream_requests > 0)
      problems.push(`${HIT_LABELS[way]}: ${m.upstream_requests} of ${m.load.ok} requests reached the mock`);
  }
  for (const way of missWays) {
    const m = misses[way];
    const problem = failuresOf(MISS_LABELS[way], m.load);
    if (problem !== null) problems.push(problem);
    if (m.upstream_requests < m.load.ok)
      problems.push(`${MISS_LABELS[way]}: only ${m.upstream_requests} of ${m.load.ok} answers came from the mock`);
  }

  ctx.progress(`streamed, one at a time: time to first byte, ${STREAMS_PER_HALF} streams per way and half`);
  const streamed = await firstBytes(hitWays, gateways, mock, requests, STREAMS_PER_HALF);
  for (const way of hitWays) {
    const s = streamed[way];
    if (s.failures > 0) problems.push(`${HIT_LABELS[way]}, streamed: ${s.failures} failed streams`);
    if (way !== 'direct' && s.upstream_requests > 0)
      problems.push(`${HIT_LABELS[way]}, streamed: ${s.upstream_requests} streams reached the mock`);
  }

  const hitRatio = (w: HitWay) => round(hits[w].load.req_per_s / hits.direct.load.req_per_s, 3);
  const missRatio = (w: MissWay) => round(misses[w].load.req_per_s / misses.uncached.load.req_per_s, 3);
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
      `streamed hits, one at a time on one connection: time to first byte and to the first text (ms)`,
      ['way', 'streams', 'ttfb p50', 'ttfb p90', 'ttfb p99', 'first text p50', 'upstream'],
      hitWays.map((w) => {
        const s = streamed[w];
        const b = s.first_byte_ms;
        return [HIT_LABELS[w], b.count, b.p50Ms, b.p90Ms, b.p99Ms, s.first_token_ms.p50Ms, s.upstream_requests];
      }),
    ),
  ];
  return {
    figures: {
      connections: CONNECTIONS,
      stores,
      hits,
      misses,
      streamed,
      hit_ratio: Object.fromEntries(stores.map((s) => [s, hitRatio(s)])),
      miss_ratio: Object.fromEntries(stores.map((s) => [s, missRatio(s)])),
    },
    targets,
    tables,
    problems,
  };
}

function row(label: string, m: Measured, ratio: number): Array<string | number | null> {
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

/** Alternating slices per way, each with the answering process's CPU and the mock's request count around it. */
async function measure<W extends string>(
  ways: readonly W[],
  spec: (way: W) => LoadSpec,
  pidOf: (way: W) => number,
  mock: MockProcess,
  rounds: number,
): Promise<Record<W, Measured>> {
  const cpuMs = Object.fromEntries(ways.map((w) => [w, 0])) as Record<W, number>;
  const upstream = Object.fromEntries(ways.map((w) => [w, 0])) as Record<W, number>;
  const runs = await alternate(
    ways,
    async (way) => {
      const before = await mock.total();
      const { result, cpuMs: used } = await cpuUsedDuring([pidOf(way)], () => runLoad(spec(way)));
      upstream[way] += (await mock.total()) - before;
      cpuMs[way] += used[0] ?? Number.NaN;
      return result;
    },
    rounds,
  );
  const out = {} as Record<W, Measured>;
  for (const way of ways) {
    const load = loadFigures(runs[way]);
    const cpu = load.ok > 0 && Number.isFinite(cpuMs[way]) ? round((cpuMs[way] * 1000) / load.ok, 1) : null;
    out[way] = { load, cpu_us_per_request: cpu, upstream_requests: upstream[way] };
  }
  return out;
}

/** The streamed question, one at a time: straight to the mock, and as a hit on each store. */
async function firstBytes(
  ways: readonly HitWay[],
  gateways: Record<Store, GatewayProcess>,
  mock: MockProcess,
  requests: CacheRequests,
  perHalf: number,
): Promise<Record<HitWay, FirstBytes>> {
  const upstream = Object.fromEntries(ways.map((w) => [w, 0])) as Record<HitWay, number>;
  const runs = await alternate(ways, async (way) => {
    const base = way === 'direct' ? new URL(mock.baseUrl).origin : gateways[way].url;
    const before = await mock.total();
    const run = await runFirstTokens(
      base,
      { path: '/v1/chat/completions', headers: HEADERS, body: requests.streamed(CACHED_ROUTE), isFirstToken },
      perHalf,
    );
    upstream[way] += (await mock.total()) - before;
    return run;
  });
  const out = {} as Record<HitWay, FirstBytes>;
  for (const way of ways) {
    out[way] = {
      failures: runs[way].reduce((s, r) => s + r.failures, 0),
      upstream_requests: upstream[way],
      first_byte_ms: summarizeLatency(runs[way].flatMap((r) => r.firstByteMs)),
      first_token_ms: summarizeLatency(runs[way].flatMap((r) => r.samplesMs)),
    };
  }
  return out;
}
