import { alternate, roundsFor } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, type LoadRun, loadFigures, runLoad } from '../lib/load.js';
import { round } from '../lib/percentiles.js';
import { cpuUsedDuring } from '../lib/proc-cpu.js';
import {
  checkTarget,
  monotonicUs,
  type ProfileWindow,
  type Scenario,
  type ScenarioContext,
  type ScenarioReport,
  type TargetCheck,
} from '../lib/scenario.js';
import { runSequential, type SequentialFigures, sequentialFigures } from '../lib/sequential.js';
import { renderTable } from '../lib/table.js';
import { compareWire, observeWire } from '../lib/wire.js';

// The gateway against a direct call to the mock, on the 2-core reference machine.
const RATIO_TARGET = 0.35;
const ADDED_P50_TARGET_MS = 0.3;
// Against a bare Node proxy (bench/minimal-proxy.mjs), same run. The throughput goals are
// read against the bare proxy sending the gateway's headers (ADR 0024); the ratio to the
// bare proxy as first defined (no extra headers) is reported beside them.
const VS_MINIMAL_TARGET = { gateway: 0.9, gateway_no_access_log: 1.0 } as const;
// And against the bare proxy as first defined (node:http + an undici Pool, the body buffered
// and relayed, no routing, none of the gateway's headers): the floor a user would build.
const VS_BARE_TARGET = 0.9;
const ADDED_P50_VS_MINIMAL_TARGET_MS = 0.05;
const CONCURRENCIES = [1, 32] as const;
const SEQUENTIAL_REQUESTS = 3000;

type TargetKey = 'direct' | 'minimal_proxy' | 'minimal_proxy_same_wire' | 'gateway' | 'gateway_no_access_log';
const LABELS: Record<TargetKey, string> = {
  direct: 'direct to mock',
  minimal_proxy: 'minimal Node proxy',
  minimal_proxy_same_wire: "minimal proxy, gateway's headers",
  gateway: 'gateway (access log on)',
  gateway_no_access_log: 'gateway (access log off)',
};
const GATEWAYS = ['gateway', 'gateway_no_access_log'] as const;
/** The file each profiled process writes under --cpu-prof (fleet.ts), without `.cpuprofile`. */
const PROFILES: Partial<Record<TargetKey, string>> = {
  minimal_proxy: 'minimal-proxy',
  minimal_proxy_same_wire: 'minimal-proxy-same-wire',
  gateway: 'gateway',
  gateway_no_access_log: 'gateway-no-access-log',
};
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
  /** Gateway / minimal proxy, and gateway minus minimal proxy: the gateway's own work and its headers' cost. */
  readonly vs_minimal_ratio_c32: number;
  /** Gateway / the minimal proxy sending the same headers: the gateway's own work alone (ADR 0024). */
  readonly vs_same_wire_ratio_c32: number;
  /** The proxy's own CPU per request at c=32: minimal's / the gateway's (above 1: the gateway spends less). */
  readonly cpu_ratio_vs_minimal_c32: number | null;
  readonly cpu_ratio_vs_same_wire_c32: number | null;
  readonly vs_minimal_added_p50_ms_c1: number;
  readonly vs_minimal_added_p50_ms_sequential: number;
}

/**
 * What one pass through the gateway costs. One mock provider process; the same
 * small non-streaming chat completion sent straight to it and through two gateway
 * processes (default config with the access log, and with `log.access: false`), at
 * concurrency 1 and 32, in alternating order within one run.
 */
export const proxyOverhead: Scenario = {
  name: 'proxy-overhead',
  summary: 'req/s and latency direct to a mock vs through the gateway, at c=1 and c=32',
  estimateS: (d) => 5 + 5 * 1.5 + CONCURRENCIES.length * 5 * d + 6,
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
    const minimal = await ctx.fleet.startMinimalProxy(mock.baseUrl, undefined, { cpuProfileDir: ctx.cpuProfileDir });
    const mockOrigin = new URL(mock.baseUrl).origin;
    // The second baseline sends what the gateway sends, read off one of its requests.
    const gatewayWire = await observeWire(`${gwOff.url}/v1/chat/completions`, CHAT_BODY, mockOrigin);
    if (typeof gatewayWire === 'string') return { figures: {}, targets: [], tables: [], problems: [gatewayWire] };
    const sameWire = await ctx.fleet.startMinimalProxy(mock.baseUrl, gatewayWire.wire, { cpuProfileDir: ctx.cpuProfileDir });
    const urls: Record<TargetKey, string> = {
      direct: `${mock.baseUrl}/chat/completions`,
      minimal_proxy: `${minimal.url}/v1/chat/completions`,
      minimal_proxy_same_wire: `${sameWire.url}/v1/chat/completions`,
      gateway: `${gwOn.url}/v1/chat/completions`,
      gateway_no_access_log: `${gwOff.url}/v1/chat/completions`,
    };
    const pids: Record<TargetKey, number | null> = {
      direct: null,
      minimal_proxy: minimal.pid,
      minimal_proxy_same_wire: sameWire.pid,
      gateway: gwOn.pid,
      gateway_no_access_log: gwOff.pid,
    };
    const keys = Object.keys(urls) as TargetKey[];
    const problems: string[] = [];

    for (const key of keys) {
      const problem = await smokeTest(key, urls[key]);
      if (problem !== null) problems.push(problem);
    }
    const wireProblem = await compareWire(LABELS.minimal_proxy_same_wire, urls.minimal_proxy_same_wire, CHAT_BODY, mockOrigin, gatewayWire);
    if (wireProblem !== null) problems.push(wireProblem);
    if (problems.length > 0) return { figures: { urls }, targets: [], tables: [], problems };

    ctx.progress(`warm-up: ${ctx.warmupS} s per target at c=32`);
    for (const key of keys) await runLoad({ url: urls[key], body: CHAT_BODY, connections: 32, durationS: ctx.warmupS });

    const load: Record<string, Record<TargetKey, LoadFigures>> = {};
    // CPU used during the c=32 slices, per target: the process under test, the mock, and this
    // process (the load generator). Each request costs all three on the same two cores.
    const cpu = Object.fromEntries(keys.map((k) => [k, { proxyMs: 0, mockMs: 0, clientMs: 0, ok: 0 }])) as Record<TargetKey, CpuUse>;
    // Under --cpu-prof, the c=32 slices of each profiled process: its profile is read for them only.
    const windows = Object.fromEntries(keys.map((k) => [k, { spansUs: [] as Array<readonly [number, number]>, requests: 0 }]));
    for (const c of CONCURRENCIES) {
      const rounds = roundsFor(ctx.durationS);
      ctx.progress(`c=${c}: ${keys.length} targets x ${rounds} slices of ${ctx.durationS / rounds} s, order A-B-C-C-B-A-…`);
      const runs = await alternate(
        keys,
        (key) => {
          const slice = () => runLoad({ url: urls[key], body: CHAT_BODY, connections: c, durationS: ctx.durationS / rounds });
          return c === 32 ? measuredCpu(slice, pids[key], mock.pid, cpu[key], windows[key]) : slice();
        },
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
    const cpuUs = Object.fromEntries(keys.map((k) => [k, cpuPerRequest(cpu[k], pids[k] !== null)])) as Record<TargetKey, CpuPerRequest>;
    const cpuRatio = (base: TargetKey, g: GatewayKey): number | null => {
      const b = cpuUs[base].proxy;
      const own = cpuUs[g].proxy;
      return b === null || own === null || own === 0 ? null : round(b / own, 3);
    };
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
      vs_same_wire_ratio_c32: round(c32[g].req_per_s / c32.minimal_proxy_same_wire.req_per_s, 3),
      cpu_ratio_vs_minimal_c32: cpuRatio('minimal_proxy', g),
      cpu_ratio_vs_same_wire_c32: cpuRatio('minimal_proxy_same_wire', g),
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
        checkTarget(
          `throughput ratio gateway/minimal proxy with the gateway's headers, c=32${tag}`,
          d.vs_same_wire_ratio_c32,
          '>=',
          VS_MINIMAL_TARGET[g],
          '',
        ),
      );
      targets.push(
        checkTarget(
          `throughput ratio gateway/minimal proxy (bare: buffers and relays, no routing), c=32${tag}`,
          d.vs_minimal_ratio_c32,
          '>=',
          VS_BARE_TARGET,
          '',
        ),
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
    const cpuRows = keys.map((k) => {
      const u = cpuUs[k];
      return [LABELS[k], c32[k].req_per_s, u.proxy ?? '-', u.mock ?? '-', u.client ?? '-', u.sum ?? '-'];
    });
    const headersCost = {
      throughput_ratio_c32: round(c32.minimal_proxy_same_wire.req_per_s / c32.minimal_proxy.req_per_s, 3),
      cpu_ratio_c32:
        cpuUs.minimal_proxy.proxy === null || cpuUs.minimal_proxy_same_wire.proxy === null
          ? null
          : round(cpuUs.minimal_proxy.proxy / cpuUs.minimal_proxy_same_wire.proxy, 3),
      response_headers: gatewayWire.responseNames,
      upstream_headers: gatewayWire.upstreamNames,
    };
    const addedRows = GATEWAYS.map((g) => {
      const d = derived[g];
      return [
        LABELS[g],
        d.throughput_ratio_c32,
        d.vs_minimal_ratio_c32,
        d.vs_same_wire_ratio_c32,
        d.cpu_ratio_vs_minimal_c32 ?? '-',
        d.cpu_ratio_vs_same_wire_c32 ?? '-',
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
        'CPU per request at c=32 (µs: the process under test, the mock, the load generator, their sum)',
        ['target', 'req/s', 'proxy', 'mock', 'client', 'sum'],
        cpuRows,
      ),
      renderTable(
        "gateway against direct, the minimal proxy, and the minimal proxy with the gateway's headers (same wire); cpu = the proxy's own CPU per request, baseline / gateway",
        [
          'gateway',
          '/direct c=32',
          '/minimal c=32',
          '/same wire c=32',
          'cpu /minimal',
          'cpu /same wire',
          '+p50 c=1',
          '+p50 c=1 vs minimal',
          '+p50 seq',
          '+p50 seq vs minimal',
        ],
        addedRows,
      ),
      `the gateway's headers (${headersCost.response_headers.length} on the response, ${headersCost.upstream_headers.length} upstream) at c=32: with them the minimal proxy serves ${headersCost.throughput_ratio_c32} of its bare req/s, and its CPU per request is bare / with them = ${headersCost.cpu_ratio_c32 ?? '-'}\n  response: ${headersCost.response_headers.join(', ')}\n  upstream: ${headersCost.upstream_headers.join(', ')}\n`,
    ];

    return {
      figures: {
        body_bytes: Buffer.byteLength(CHAT_BODY),
        duration_s_per_target_and_concurrency: ctx.durationS,
        warmup_s: ctx.warmupS,
        cpu_profiled: ctx.cpuProfileDir !== null,
        load,
        sequential,
        cpu_us_per_request_c32: cpuUs,
        headers_cost: headersCost,
        derived,
      },
      targets,
      tables,
      problems,
      profileWindows: Object.fromEntries(
        keys.flatMap((k) => (PROFILES[k] === undefined ? [] : [[PROFILES[k], windows[k] as ProfileWindow]])),
      ),
    };
  },
};

async function smokeTest(key: TargetKey, url: string): Promise<string | null> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: CHAT_BODY });
    const text = await res.text();
    if (res.status !== 200) return `${LABELS[key]}: smoke request answered ${res.status}: ${text.slice(0, 300)}`;
    if ((key === 'gateway' || key === 'gateway_no_access_log') && res.headers.get('x-switchyard-provider') !== 'bench')
      return `${LABELS[key]}: no x-switchyard-provider: bench header`;
    return null;
  } catch (err) {
    return `${LABELS[key]}: smoke request failed: ${(err as Error).message}`;
  }
}

interface CpuUse {
  proxyMs: number;
  mockMs: number;
  clientMs: number;
  ok: number;
}

interface CpuPerRequest {
  readonly proxy: number | null;
  readonly mock: number | null;
  readonly client: number | null;
  readonly sum: number | null;
}

/** Runs one load slice, adding the CPU the three processes used during it to `into` (NaN once one is unreadable). */
async function measuredCpu(
  slice: () => Promise<LoadRun>,
  proxyPid: number | null,
  mockPid: number,
  into: CpuUse,
  window?: { spansUs: Array<readonly [number, number]>; requests: number },
): Promise<LoadRun> {
  const client0 = process.cpuUsage();
  const fromUs = monotonicUs();
  const { result: run, cpuMs } = await cpuUsedDuring([proxyPid, mockPid], slice);
  window?.spansUs.push([fromUs, monotonicUs()]);
  if (window !== undefined) window.requests += run.ok;
  const client = process.cpuUsage(client0);
  into.proxyMs += proxyPid === null ? 0 : (cpuMs[0] ?? Number.NaN);
  into.mockMs += cpuMs[1] ?? Number.NaN;
  into.clientMs += (client.user + client.system) / 1000;
  into.ok += run.ok;
  return run;
}

function cpuPerRequest(u: CpuUse, hasProxy = true): CpuPerRequest {
  const per = (ms: number) => (u.ok === 0 || Number.isNaN(ms) ? null : round((ms * 1000) / u.ok, 1));
  const proxy = hasProxy ? per(u.proxyMs) : null;
  const mock = per(u.mockMs);
  const client = per(u.clientMs);
  const parts = [proxy ?? 0, mock, client];
  const sum = parts.some((p) => p === null)
    ? null
    : round(
        parts.reduce<number>((a, b) => a + (b ?? 0), 0),
        1,
      );
  return { proxy, mock, client, sum };
}
