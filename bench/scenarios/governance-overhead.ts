import { randomUUID } from 'node:crypto';
import { hashKey } from '../../src/governance/index.js';
import { alternate, roundsFor } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, loadFigures, runLoad } from '../lib/load.js';
import { round } from '../lib/percentiles.js';
import { cpuUsedDuring, machineTicks } from '../lib/proc-cpu.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// The governance targets: throughput with one key and generous limits, against the same gateway
// without keys, same run.
const TARGETS = { memory: 0.9, redis: 0.6 } as const;
/**
 * Throughput is what a gateway serves at its best (ADR 0023). At c=32 the open and
 * memory-store gateways are CPU-bound and at their best; the redis-store one is not: its
 * requests wait for Redis's round trip while a fifth of the machine sits idle, and it
 * serves its most at c=128. So every gateway runs at both, and each target compares the
 * gateways' best req/s; both concurrencies are shown.
 */
const CONCURRENCIES = [32, 128] as const;
const BENCH_KEY = 'sy-bench-key-not-a-secret';

type Key = 'open' | 'memory' | 'redis';
const LABELS: Record<Key, string> = { open: 'gateway without keys', memory: 'one key, memory store', redis: 'one key, redis store' };

/**
 * What authentication, the pre-check (a reservation) and the settle cost per
 * request. Three gateway processes over one mock: no keys, keys with the memory store,
 * keys with the redis store (the machine's Redis at 127.0.0.1:6379, a unique key prefix).
 */
export const governanceOverhead: Scenario = {
  name: 'governance-overhead',
  summary: 'req/s with one key and generous limits (memory and redis stores) vs without keys, c=32 and c=128',
  estimateS: (d) => 6 + 3 * 1.5 + CONCURRENCIES.length * 3 * d,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const mock = await ctx.fleet.startMock('bench');
    const base = () =>
      gatewayConfig({
        providers: { bench: mockProvider(mock.baseUrl) },
        routes: { [BENCH_MODEL]: { candidates: [{ provider: 'bench' }] } },
      });
    const governed = (store: 'memory' | 'redis') => ({
      ...base(),
      teams: { bench: { rate_limit: { rpm: 100_000_000, tpm: 1_000_000_000 }, budget: { usd_per_month: 1_000_000 } } },
      keys: [{ id: 'bench', team: 'bench', sha256: hashKey(BENCH_KEY), rpm: 100_000_000 }],
      pricing: { models: { [BENCH_MODEL]: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } } },
      governance:
        store === 'memory' ? { store } : { store, redis_url: 'redis://127.0.0.1:6379', key_prefix: `switchyard-bench-${randomUUID()}:` },
    });
    const gateways = {
      open: await ctx.fleet.startGateway('open', base(), { cpuProfileDir: ctx.cpuProfileDir }),
      memory: await ctx.fleet.startGateway('memory', governed('memory'), { cpuProfileDir: ctx.cpuProfileDir }),
      redis: await ctx.fleet.startGateway('redis', governed('redis'), { cpuProfileDir: ctx.cpuProfileDir }),
    };
    const keys = Object.keys(gateways) as Key[];
    const headers = { authorization: `Bearer ${BENCH_KEY}` };
    const spec = (k: Key, connections: number, durationS: number) => ({
      url: `${gateways[k].url}/v1/chat/completions`,
      body: CHAT_BODY,
      connections,
      durationS,
      headers,
    });

    ctx.progress(`warm-up: ${ctx.warmupS} s per gateway`);
    for (const k of keys) await runLoad(spec(k, 32, ctx.warmupS));
    const rounds = roundsFor(ctx.durationS);
    const byConcurrency: Array<Awaited<ReturnType<typeof measureAt>>> = [];
    for (const c of CONCURRENCIES) {
      ctx.progress(`c=${c}: ${keys.length} gateways x ${rounds} slices of ${ctx.durationS / rounds} s, order A-B-C-C-B-A-…`);
      byConcurrency.push(await measureAt(c, rounds));
    }
    // Each gateway's capacity: its best req/s over the concurrencies measured (ADR 0023).
    const capacity = Object.fromEntries(
      keys.map((k) => {
        const best = byConcurrency.reduce((a, b) => (b.load[k].req_per_s > a.load[k].req_per_s ? b : a));
        return [k, { req_per_s: best.load[k].req_per_s, c: best.c }];
      }),
    ) as Record<Key, { req_per_s: number; c: number }>;
    const capacityRatio = (k: Key) => round(capacity[k].req_per_s / capacity.open.req_per_s, 3);
    const targets = (['memory', 'redis'] as const).map((store) =>
      checkTarget(
        `throughput ratio one key (${store} store) / no keys, best of c=${CONCURRENCIES.join(' and c=')}`,
        capacityRatio(store),
        '>=',
        TARGETS[store],
        '',
      ),
    );
    const rows = byConcurrency.flatMap((m) =>
      keys.map((k) => [
        LABELS[k],
        m.c,
        m.load[k].req_per_s,
        m.ratio(k),
        m.cpuUsPerRequest(k) ?? '-',
        m.cpuRatio(k) ?? '-',
        m.busyPercent[k] ?? '-',
        m.idlePercent[k] ?? '-',
        m.load[k].latency_ms.p50Ms,
        m.load[k].latency_ms.p99Ms,
        m.load[k].ok,
        m.load[k].errors + m.load[k].non2xx,
      ]),
    );
    const figuresAt = (m: (typeof byConcurrency)[number]) => ({
      load: m.load,
      ratios: { memory: m.ratio('memory'), redis: m.ratio('redis') },
      cpu_us_per_request: { open: m.cpuUsPerRequest('open'), memory: m.cpuUsPerRequest('memory'), redis: m.cpuUsPerRequest('redis') },
      cpu_ratios: { memory: m.cpuRatio('memory'), redis: m.cpuRatio('redis') },
      gateway_busy_percent: m.busyPercent,
      machine_idle_percent: m.idlePercent,
    });
    return {
      figures: {
        ...Object.fromEntries(byConcurrency.map((m) => [`c${m.c}`, figuresAt(m)])),
        capacity: { ...capacity, ratios: { memory: capacityRatio('memory'), redis: capacityRatio('redis') } },
      },
      targets,
      tables: [
        renderTable(
          "governance (ms; the gateway's CPU per request in µs, no-keys CPU / this CPU, the gateway's busy share of one core, the machine's idle share)",
          ['gateway', 'c', 'req/s', '/no keys', 'cpu µs/req', 'cpu ratio', 'busy %', 'idle %', 'p50', 'p99', '2xx', 'failed'],
          rows,
        ),
        renderTable(
          'capacity: each gateway at its best concurrency',
          ['gateway', 'best req/s', 'at c', '/no keys'],
          keys.map((k) => [LABELS[k], capacity[k].req_per_s, capacity[k].c, capacityRatio(k)]),
        ),
      ],
      problems: byConcurrency.flatMap((m) => m.problems),
    };

    async function measureAt(c: number, rounds: number) {
      // Per gateway, over its slices: its CPU, the wall time, and the machine's ticks (all and idle).
      const used = Object.fromEntries(keys.map((k) => [k, { cpuMs: 0, wallMs: 0, ticks: 0, idleTicks: 0 }])) as Record<
        Key,
        { cpuMs: number; wallMs: number; ticks: number; idleTicks: number }
      >;
      const runs = await alternate(
        keys,
        async (k) => {
          const ticksBefore = machineTicks();
          const started = performance.now();
          const { result: run, cpuMs } = await cpuUsedDuring([gateways[k].pid], () => runLoad(spec(k, c, ctx.durationS / rounds)));
          used[k].wallMs += performance.now() - started;
          const ticksAfter = machineTicks();
          used[k].cpuMs += cpuMs[0] ?? 0;
          if (ticksBefore !== null && ticksAfter !== null) {
            used[k].ticks += ticksAfter.total - ticksBefore.total;
            used[k].idleTicks += ticksAfter.idle - ticksBefore.idle;
          }
          return run;
        },
        rounds,
      );
      const load = Object.fromEntries(keys.map((k) => [k, loadFigures(runs[k])])) as Record<Key, LoadFigures>;
      const problems = keys.map((k) => failuresOf(`${LABELS[k]} c=${c}`, load[k])).filter((p): p is string => p !== null);
      const ratio = (k: Key) => round(load[k].req_per_s / load.open.req_per_s, 3);
      // The gateway's own CPU per request: steadier than req/s on a shared machine (see proc-cpu.ts).
      const cpuUsPerRequest = (k: Key) => (load[k].ok > 0 ? round((used[k].cpuMs * 1000) / load[k].ok, 1) : null);
      const cpuRatio = (k: Key) => {
        const own = cpuUsPerRequest(k);
        const open = cpuUsPerRequest('open');
        return own === null || open === null || own === 0 ? null : round(open / own, 3);
      };
      const percentOf = (part: (u: (typeof used)[Key]) => number, whole: (u: (typeof used)[Key]) => number) =>
        Object.fromEntries(keys.map((k) => [k, whole(used[k]) > 0 ? round((100 * part(used[k])) / whole(used[k]), 1) : null])) as Record<
          Key,
          number | null
        >;
      const idlePercent = percentOf(
        (u) => u.idleTicks,
        (u) => u.ticks,
      );
      // How much of one core the gateway used while loaded: near 100 % it is the bottleneck.
      const busyPercent = percentOf(
        (u) => u.cpuMs,
        (u) => u.wallMs,
      );
      return { c, load, problems, ratio, cpuUsPerRequest, cpuRatio, idlePercent, busyPercent };
    }
  },
};
