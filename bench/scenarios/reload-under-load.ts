import { alternate } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, type LoadRun, loadFigures, runLoad } from '../lib/load.js';
import { median, percentile, round } from '../lib/percentiles.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// The reload-under-load targets: no failed request, and p99 with reloads within 1.5x of p99
// without.
const RELOADS = 50;
const P99_RATIO_TARGET = 1.5;
const CONCURRENCY = 16;

interface ReloadSample {
  readonly status: number;
  readonly result: string;
  readonly generation: number;
  /** The gateway's own measure of the reload, from the /admin/reload reply. */
  readonly durationMs: number;
  /** POST to reply, seen from the bench process (which is busy generating load). */
  readonly roundTripMs: number;
  readonly errors: readonly unknown[];
}

/**
 * 50 reloads spread evenly over a run at steady concurrency, against an
 * identical run without reloads, in one run of the same gateway process. Each reload
 * rewrites the config file, alternating between two configs that differ in candidate
 * order, policy, weights and pricing, then POSTs /admin/reload.
 */
export const reloadUnderLoad: Scenario = {
  name: 'reload-under-load',
  summary: `${RELOADS} reloads at c=${CONCURRENCY} vs the same load without reloads`,
  estimateS: (d) => 4 + 1.5 + 4 * d + 2,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const [alpha, beta] = await Promise.all([ctx.fleet.startMock('alpha'), ctx.fleet.startMock('beta')]);
    const providers = { alpha: mockProvider(alpha!.baseUrl), beta: mockProvider(beta!.baseUrl) };
    // A and B differ in policy, candidate order and pricing, yet both spread the load evenly
    // over the two mocks: the runs with and without reloads then differ only by the reloads.
    const configs = [
      gatewayConfig({
        admin: true,
        providers,
        routes: { [BENCH_MODEL]: { policy: 'round_robin', candidates: [{ provider: 'alpha' }, { provider: 'beta' }] } },
        pricing: { [BENCH_MODEL]: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } },
      }),
      gatewayConfig({
        admin: true,
        providers,
        routes: {
          [BENCH_MODEL]: {
            policy: 'weighted',
            candidates: [
              { provider: 'beta', weight: 5 },
              { provider: 'alpha', weight: 5 },
            ],
          },
        },
        pricing: { [BENCH_MODEL]: { input_usd_per_mtok: 0.3, output_usd_per_mtok: 1.2 } },
      }),
    ] as const;
    const gw = await ctx.fleet.startGateway('gateway-reload', configs[0], { cpuProfileDir: ctx.cpuProfileDir });
    if (gw.adminUrl === null) throw new Error('the gateway logged no admin_url although admin_listen is set');
    const url = `${gw.url}/v1/chat/completions`;
    const problems: string[] = [];

    let flips = 0;
    const reload = async (): Promise<ReloadSample> => {
      flips += 1;
      gw.writeConfig(configs[flips % 2]!);
      const t0 = performance.now();
      const res = await fetch(`${gw.adminUrl}/admin/reload`, { method: 'POST' });
      const body = (await res.json()) as { result?: string; generation?: number; duration_ms?: number; errors?: unknown[] };
      return {
        status: res.status,
        result: body.result ?? '?',
        generation: body.generation ?? -1,
        durationMs: body.duration_ms ?? Number.NaN,
        roundTripMs: performance.now() - t0,
        errors: body.errors ?? [],
      };
    };

    ctx.progress(`warm-up: ${ctx.warmupS} s at c=${CONCURRENCY} with 4 reloads`);
    const warm = await Promise.all([
      runLoad({ url, body: CHAT_BODY, connections: CONCURRENCY, durationS: ctx.warmupS }),
      spacedReloads(4, ctx.warmupS, reload),
    ]);
    if (flips % 2 === 1) await reload(); // Measurements start on config A.
    const warmFailures = failuresOf('warm-up', loadFigures([warm[0]]));
    if (warmFailures !== null) problems.push(warmFailures);

    const served = { alpha: 0, beta: 0 };
    const servedBy = async (): Promise<{ alpha: number; beta: number }> => ({ alpha: await alpha!.total(), beta: await beta!.total() });
    const halfS = ctx.durationS;
    const perHalf = RELOADS / 2;
    const samples: ReloadSample[] = [];
    const share: Record<'without_reloads' | 'with_reloads', { alpha: number; beta: number }> = {
      without_reloads: { ...served },
      with_reloads: { ...served },
    };
    ctx.progress(`measure: without / with ${perHalf} reloads / with ${perHalf} reloads / without, ${halfS} s each at c=${CONCURRENCY}`);
    const runs = await alternate(['without_reloads', 'with_reloads'] as const, async (key): Promise<LoadRun> => {
      const before = await servedBy();
      const [run, reloads] = await Promise.all([
        runLoad({ url, body: CHAT_BODY, connections: CONCURRENCY, durationS: halfS }),
        key === 'with_reloads' ? spacedReloads(perHalf, halfS, reload) : Promise.resolve([]),
      ]);
      samples.push(...reloads);
      const after = await servedBy();
      share[key].alpha += after.alpha - before.alpha;
      share[key].beta += after.beta - before.beta;
      return run;
    });

    const without = loadFigures(runs.without_reloads);
    const withReloads = loadFigures(runs.with_reloads);
    for (const [label, f] of [
      ['without reloads', without],
      ['with reloads', withReloads],
    ] as const) {
      const problem = failuresOf(label, f);
      if (problem !== null) problems.push(problem);
    }
    const refused = samples.filter((s) => s.status !== 200 || s.result !== 'applied');
    for (const s of refused.slice(0, 5))
      problems.push(`a reload answered ${s.status} ${s.result}: ${JSON.stringify(s.errors).slice(0, 300)}`);
    if (refused.length > 5) problems.push(`... and ${refused.length - 5} more reloads that did not apply`);
    if (samples.length !== RELOADS) problems.push(`${samples.length} reloads ran, expected ${RELOADS}`);
    const generations = samples.map((s) => s.generation);
    if (generations.some((g, i) => i > 0 && g !== (generations[i - 1] as number) + 1))
      problems.push(`reload generations did not advance one by one: ${generations.join(',')}`);

    const durations = samples.map((s) => s.durationMs);
    const roundTrips = samples.map((s) => s.roundTripMs);
    const sortedDurations = Float64Array.from(durations).sort();
    const failedWithReloads = withReloads.errors + withReloads.non2xx;
    const p99Ratio = round(withReloads.latency_ms.p99Ms / without.latency_ms.p99Ms, 3);
    const reloads = {
      count: samples.length,
      applied: samples.length - refused.length,
      first_generation: samples[0]?.generation ?? null,
      last_generation: samples[samples.length - 1]?.generation ?? null,
      duration_ms: {
        median: round(median(durations)),
        p90: round(percentile(sortedDurations, 0.9)),
        max: round(sortedDurations[sortedDurations.length - 1] ?? Number.NaN),
      },
      round_trip_ms_median: round(median(roundTrips)),
    };

    const targets = [
      checkTarget('failed requests during reloads', failedWithReloads, '<=', 0, ''),
      checkTarget('p99 with reloads / p99 without', p99Ratio, '<=', P99_RATIO_TARGET, 'x'),
    ];
    const row = (label: string, f: LoadFigures, s: { alpha: number; beta: number }) => [
      label,
      f.req_per_s,
      f.latency_ms.p50Ms,
      f.latency_ms.p99Ms,
      f.latency_ms.p999Ms,
      f.latency_ms.maxMs,
      f.ok,
      f.errors + f.non2xx,
      `${s.alpha}/${s.beta}`,
    ];
    const tables = [
      renderTable(
        `reload under load: c=${CONCURRENCY}, ${halfS * 2} s each (ms)`,
        ['run', 'req/s', 'p50', 'p99', 'p99.9', 'max', '2xx', 'failed', 'alpha/beta'],
        [row('without reloads', without, share.without_reloads), row(`with ${samples.length} reloads`, withReloads, share.with_reloads)],
      ),
      renderTable(
        'reloads (gateway-side duration_ms; round trip seen by the loaded bench process)',
        ['applied', 'median ms', 'p90 ms', 'max ms', 'round trip median ms', 'generations'],
        [
          [
            `${reloads.applied}/${reloads.count}`,
            reloads.duration_ms.median,
            reloads.duration_ms.p90,
            reloads.duration_ms.max,
            reloads.round_trip_ms_median,
            `${reloads.first_generation}..${reloads.last_generation}`,
          ],
        ],
      ),
    ];
    return {
      figures: {
        concurrency: CONCURRENCY,
        duration_s_per_run: halfS * 2,
        cpu_profiled: ctx.cpuProfileDir !== null,
        without_reloads: without,
        with_reloads: withReloads,
        served_by: share,
        failed_requests_with_reloads: failedWithReloads,
        p99_ratio: p99Ratio,
        reloads,
      },
      targets,
      tables,
      problems,
    };
  },
};

/** `count` reloads, one at a time, at evenly spaced instants over `overS` seconds. */
async function spacedReloads(count: number, overS: number, reload: () => Promise<ReloadSample>): Promise<ReloadSample[]> {
  const start = performance.now();
  const intervalMs = (overS * 1000) / count;
  const out: ReloadSample[] = [];
  for (let i = 0; i < count; i++) {
    const due = start + (i + 0.5) * intervalMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    out.push(await reload());
  }
  return out;
}
