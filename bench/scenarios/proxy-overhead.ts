import { alternate, roundsFor } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, loadFigures, runLoad } from '../lib/load.js';
import { round } from '../lib/percentiles.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport, type TargetCheck } from '../lib/scenario.js';
import { runSequential, type SequentialFigures, sequentialFigures } from '../lib/sequential.js';
import { renderTable } from '../lib/table.js';

// Issue 2's targets on the 2-core reference machine.
const RATIO_TARGET = 0.35;
const ADDED_P50_TARGET_MS = 0.3;
// Issue 7's: against a bare Node proxy (bench/minimal-proxy.mjs), same run.
const VS_MINIMAL_TARGET = { gateway: 0.9, gateway_no_access_log: 1.0 } as const;
const ADDED_P50_VS_MINIMAL_TARGET_MS = 0.05;
const CONCURRENCIES = [1, 32] as const;
const SEQUENTIAL_REQUESTS = 3000;

type TargetKey = 'direct' | 'minimal_proxy' | 'gateway' | 'gateway_no_access_log';
const LABELS: Record<TargetKey, string> = {
  direct: 'direct to mock',
  minimal_proxy: 'minimal Node proxy',
  gateway: 'gateway (access log on)',
  gateway_no_access_log: 'gateway (access log off)',
};
const GATEWAYS = ['gateway', 'gateway_no_access_log'] as const;
type GatewayKey = (typeof GATEWAYS)[number];

/** Gateway minus direct, from the same run. */
interface Overhead {
  readonly throughput_ratio_c32: number;
  readonly throughput_ratio_c1: number;
  readonly added_p50_ms_c1: number;
  readonly added_p99_ms_c1: number;
  readonly added_p50_ms_c32: number;
  readonly added_p99_ms_c32: number;
  readonly added_p50_ms_sequential: number;
  readonly added_p99_ms_sequential: number;
  /** Gateway / minimal proxy, and gateway minus minimal proxy: the gateway's own work. */
  readonly vs_minimal_ratio_c32: number;
  readonly vs_minimal_added_p50_ms_c1: number;
  readonly vs_minimal_added_p50_ms_sequential: number;
}

/**
 * Issue 2: what one pass through the gateway costs. One mock provider process; the same
 * small non-streaming chat completion sent straight to it and through two gateway
 * processes (default config with the access log, and with `log.access: false`), at
 * concurrency 1 and 32, in alternating order within one run.
 */
export const proxyOverhead: Scenario = {
  name: 'proxy-overhead',
  summary: 'req/s and latency direct to a mock vs through the gateway, at c=1 and c=32',
  estimateS: (d) => 5 + 4 * 1.5 + CONCURRENCIES.length * 4 * d + 5,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const mock = await ctx.fleet.startMock('bench');
    const config = (accessLog: boolean) =>
      gatewayConfig({
        providers: { bench: mockProvider(mock.baseUrl) },
        routes: { [BENCH_MODEL]: { candidates: [{ provider: 'bench' }] } },
        accessLog,
      });
    const gwOn = await ctx.fleet.startGateway('gateway', config(true), { cpuProfileDir: ctx.cpuProfileDir });
    const gwOff = await ctx.fleet.startGateway('gateway-no-access-log', config(false), { cpuProfileDir: ctx.cpuProfileDir });
    const minimal = await ctx.fleet.startMinimalProxy(mock.baseUrl);
    const urls: Record<TargetKey, string> = {
      direct: `${mock.baseUrl}/chat/completions`,
      minimal_proxy: `${minimal}/v1/chat/completions`,
      gateway: `${gwOn.url}/v1/chat/completions`,
      gateway_no_access_log: `${gwOff.url}/v1/chat/completions`,
    };
    const keys = Object.keys(urls) as TargetKey[];
    const problems: string[] = [];

    for (const key of keys) {
      const problem = await smokeTest(key, urls[key]);
      if (problem !== null) problems.push(problem);
    }
    if (problems.length > 0) return { figures: { urls }, targets: [], tables: [], problems };

    ctx.progress(`warm-up: ${ctx.warmupS} s per target at c=32`);
    for (const key of keys) await runLoad({ url: urls[key], body: CHAT_BODY, connections: 32, durationS: ctx.warmupS });

    const load: Record<string, Record<TargetKey, LoadFigures>> = {};
    for (const c of CONCURRENCIES) {
      const rounds = roundsFor(ctx.durationS);
      ctx.progress(`c=${c}: ${keys.length} targets x ${rounds} slices of ${ctx.durationS / rounds} s, order A-B-C-C-B-A-…`);
      const runs = await alternate(
        keys,
        (key) => runLoad({ url: urls[key], body: CHAT_BODY, connections: c, durationS: ctx.durationS / rounds }),
        rounds,
      );
      load[`c${c}`] = Object.fromEntries(keys.map((k) => [k, loadFigures(runs[k])])) as Record<TargetKey, LoadFigures>;
      for (const key of keys) {
        const problem = failuresOf(`${LABELS[key]} at c=${c}`, load[`c${c}`]![key]);
        if (problem !== null) problems.push(problem);
      }
    }

    ctx.progress(`sequential: ${SEQUENTIAL_REQUESTS} requests per target, one at a time, order A-B-C-C-B-A`);
    const seqRuns = await alternate(keys, (key) => runSequential(urls[key], CHAT_BODY, SEQUENTIAL_REQUESTS / 2));
    const sequential = Object.fromEntries(keys.map((k) => [k, sequentialFigures(seqRuns[k])])) as Record<TargetKey, SequentialFigures>;
    for (const key of keys) {
      if (sequential[key].failures > 0) problems.push(`${LABELS[key]}, sequential loop: ${sequential[key].failures} failed requests`);
    }

    const c1 = load.c1!;
    const c32 = load.c32!;
    const overheadOf = (g: GatewayKey): Overhead => ({
      throughput_ratio_c32: round(c32[g].req_per_s / c32.direct.req_per_s, 3),
      throughput_ratio_c1: round(c1[g].req_per_s / c1.direct.req_per_s, 3),
      added_p50_ms_c1: round(c1[g].latency_ms.p50Ms - c1.direct.latency_ms.p50Ms),
      added_p99_ms_c1: round(c1[g].latency_ms.p99Ms - c1.direct.latency_ms.p99Ms),
      added_p50_ms_c32: round(c32[g].latency_ms.p50Ms - c32.direct.latency_ms.p50Ms),
      added_p99_ms_c32: round(c32[g].latency_ms.p99Ms - c32.direct.latency_ms.p99Ms),
      added_p50_ms_sequential: round(sequential[g].latency_ms.p50Ms - sequential.direct.latency_ms.p50Ms),
      added_p99_ms_sequential: round(sequential[g].latency_ms.p99Ms - sequential.direct.latency_ms.p99Ms),
      vs_minimal_ratio_c32: round(c32[g].req_per_s / c32.minimal_proxy.req_per_s, 3),
      vs_minimal_added_p50_ms_c1: round(c1[g].latency_ms.p50Ms - c1.minimal_proxy.latency_ms.p50Ms),
      vs_minimal_added_p50_ms_sequential: round(sequential[g].latency_ms.p50Ms - sequential.minimal_proxy.latency_ms.p50Ms),
    });
    const derived: Record<GatewayKey, Overhead> = {
      gateway: overheadOf('gateway'),
      gateway_no_access_log: overheadOf('gateway_no_access_log'),
    };

    const targets: TargetCheck[] = [];
    for (const g of GATEWAYS) {
      const d = derived[g];
      const tag = g === 'gateway' ? '' : ' [access log off]';
      targets.push(checkTarget(`throughput ratio gateway/direct, c=32${tag}`, d.throughput_ratio_c32, '>=', RATIO_TARGET, ''));
      targets.push(checkTarget(`added p50 latency, c=1 (autocannon)${tag}`, d.added_p50_ms_c1, '<=', ADDED_P50_TARGET_MS, 'ms'));
      targets.push(
        checkTarget(`added p50 latency, sequential undici loop${tag}`, d.added_p50_ms_sequential, '<=', ADDED_P50_TARGET_MS, 'ms'),
      );
      targets.push(
        checkTarget(`throughput ratio gateway/minimal proxy, c=32${tag}`, d.vs_minimal_ratio_c32, '>=', VS_MINIMAL_TARGET[g], ''),
      );
      targets.push(
        checkTarget(
          `p50 over the minimal proxy, sequential undici loop${tag}`,
          d.vs_minimal_added_p50_ms_sequential,
          '<=',
          ADDED_P50_VS_MINIMAL_TARGET_MS,
          'ms',
        ),
      );
    }

    const loadRows = CONCURRENCIES.flatMap((c) =>
      keys.map((k) => {
        const f = load[`c${c}`]![k];
        return [LABELS[k], c, f.req_per_s, f.latency_ms.p50Ms, f.latency_ms.p90Ms, f.latency_ms.p99Ms, f.ok, f.errors + f.non2xx];
      }),
    );
    const seqRows = keys.map((k) => {
      const l = sequential[k].latency_ms;
      return [LABELS[k], l.count, l.p50Ms, l.p90Ms, l.p99Ms, l.meanMs, sequential[k].failures];
    });
    const addedRows = GATEWAYS.map((g) => {
      const d = derived[g];
      return [
        LABELS[g],
        d.throughput_ratio_c32,
        d.vs_minimal_ratio_c32,
        d.added_p50_ms_c1,
        d.vs_minimal_added_p50_ms_c1,
        d.added_p50_ms_sequential,
        d.vs_minimal_added_p50_ms_sequential,
      ];
    });
    const tables = [
      renderTable(
        'autocannon (latency from per-response hrtime timings, ms)',
        ['target', 'c', 'req/s', 'p50', 'p90', 'p99', '2xx', 'failed'],
        loadRows,
      ),
      renderTable(
        'sequential undici loop, one keep-alive connection (ms)',
        ['target', 'requests', 'p50', 'p90', 'p99', 'mean', 'failed'],
        seqRows,
      ),
      renderTable(
        'gateway against direct and against the minimal proxy',
        ['gateway', '/direct c=32', '/minimal c=32', '+p50 c=1', '+p50 c=1 vs minimal', '+p50 seq', '+p50 seq vs minimal'],
        addedRows,
      ),
    ];

    return {
      figures: {
        body_bytes: Buffer.byteLength(CHAT_BODY),
        duration_s_per_target_and_concurrency: ctx.durationS,
        warmup_s: ctx.warmupS,
        cpu_profiled: ctx.cpuProfileDir !== null,
        load,
        sequential,
        derived,
      },
      targets,
      tables,
      problems,
    };
  },
};

async function smokeTest(key: TargetKey, url: string): Promise<string | null> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: CHAT_BODY });
    const text = await res.text();
    if (res.status !== 200) return `${LABELS[key]}: smoke request answered ${res.status}: ${text.slice(0, 300)}`;
    if (key !== 'direct' && key !== 'minimal_proxy' && res.headers.get('x-switchyard-provider') !== 'bench')
      return `${LABELS[key]}: no x-switchyard-provider: bench header`;
    return null;
  } catch (err) {
    return `${LABELS[key]}: smoke request failed: ${(err as Error).message}`;
  }
}
