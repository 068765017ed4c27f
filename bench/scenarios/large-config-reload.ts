import { stringify } from 'yaml';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadRun, loadFigures, runLoad } from '../lib/load.js';
import { round } from '../lib/percentiles.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// The target: traffic p99 during a reload of the largest accepted config, against idle p99
// (same gateway, same run), at most 2x. The config is parsed in a child process at the
// lowest priority (ADR 0021), and the generation built and diffed in slices (ADR 0015). "loop p99/max" is the gateway's
// own event-loop delay over the same windows (see loopDelay).
const P99_RATIO_TARGET = 2;
const CONCURRENCY = 16;
/** server.max_config_bytes's default. */
const CAP_BYTES = 4 * 1024 * 1024;

/** The bench config plus as many extra routes as fit under the cap (in the YAML the fleet writes). */
function largestConfig(base: Record<string, unknown>): { config: Record<string, unknown>; bytes: number; routes: number } {
  const routes = { ...((base.routing as { routes: Record<string, unknown> }).routes ?? {}) };
  const sizeOf = (n: number) => {
    const r: Record<string, unknown> = { ...routes };
    // A fresh object each: one shared object would be written as YAML aliases.
    for (let i = 0; i < n; i += 1) r[`bulk-model-${i}`] = { candidates: [{ provider: 'bench' }] };
    const config = { ...base, routing: { routes: r } };
    return { config, bytes: Buffer.byteLength(stringify(config)) };
  };
  // The size grows about linearly with the count (names lengthen slowly): guess, measure,
  // correct once, then step down until it fits 97% of the cap.
  const target = CAP_BYTES * 0.97;
  let n = Math.floor(target / ((sizeOf(1000).bytes - sizeOf(0).bytes) / 1000));
  let big = sizeOf(n);
  n = Math.floor((n * target) / big.bytes);
  big = sizeOf(n);
  while (big.bytes > target) {
    n = Math.floor(n * 0.99);
    big = sizeOf(n);
  }
  return { config: big.config, bytes: big.bytes, routes: n };
}

/** The gateway's event-loop delay (ms) since the previous scrape: prom-client resets it on each one. */
interface LoopDelay {
  readonly p99Ms: number;
  readonly maxMs: number;
}

/**
 * Scrapes the admin listener's /metrics for the event-loop delay. A closed-loop load sees a
 * stall only through the few requests in flight when it starts (and a 1-s load slice drops
 * those still unanswered at its end), so the p99 ratio can miss a stall of a second or more;
 * the event loop's own delay cannot.
 */
async function loopDelay(adminUrl: string): Promise<LoopDelay> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const seconds = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`switchyard_nodejs_eventloop_lag_${name}_seconds `));
    return line === undefined ? Number.NaN : Number(line.slice(line.indexOf(' ') + 1));
  };
  return { p99Ms: round(seconds('p99') * 1000, 1), maxMs: round(seconds('max') * 1000, 1) };
}

export const largeConfigReload: Scenario = {
  name: 'large-config-reload',
  summary: `traffic p99 at c=${CONCURRENCY} while the largest accepted config (~4 MiB) reloads, vs idle`,
  estimateS: (d) => 6 + 2 * d + 40,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const mock = await ctx.fleet.startMock('bench');
    const base = gatewayConfig({
      admin: true,
      accessLog: false,
      providers: { bench: mockProvider(mock.baseUrl) },
      routes: { [BENCH_MODEL]: { candidates: [{ provider: 'bench' }] } },
    });
    const large = largestConfig(base);
    const gw = await ctx.fleet.startGateway('gateway-large-config', base, { cpuProfileDir: ctx.cpuProfileDir });
    if (gw.adminUrl === null) throw new Error('the gateway logged no admin_url although admin_listen is set');
    const url = `${gw.url}/v1/chat/completions`;
    const problems: string[] = [];
    const load = (durationS: number) => runLoad({ url, body: CHAT_BODY, connections: CONCURRENCY, durationS });

    ctx.progress(`warm-up ${ctx.warmupS} s; config of ${large.routes} routes, ${(large.bytes / 1048576).toFixed(2)} MiB`);
    await load(ctx.warmupS);
    ctx.progress(`idle: ${ctx.durationS} s at c=${CONCURRENCY}`);
    await loopDelay(gw.adminUrl);
    const idle = loadFigures([await load(ctx.durationS)]);
    const idleLoop = await loopDelay(gw.adminUrl);

    // Load runs in slices until the reload has answered, so the measured window is the reload.
    ctx.progress('reload of the large config under the same load');
    gw.writeConfig(large.config);
    const started = performance.now();
    let reply: { status: number; result?: string; duration_ms?: number; errors?: unknown } | null = null;
    const adminUrl = gw.adminUrl;
    let duringLoop: LoopDelay | null = null;
    const reloading = fetch(`${adminUrl}/admin/reload`, { method: 'POST' }).then(async (res) => {
      reply = { status: res.status, ...((await res.json()) as object) };
      duringLoop = await loopDelay(adminUrl);
    });
    const slices: LoadRun[] = [];
    let done = false;
    void reloading.finally(() => {
      done = true;
    });
    while (!done && performance.now() - started < 120_000) slices.push(await load(1));
    await reloading;
    const reloadS = round((performance.now() - started) / 1000, 2);
    const during = loadFigures(slices);
    const r = reply as { status: number; result?: string; duration_ms?: number; errors?: unknown } | null;
    if (r === null || r.status !== 200 || r.result !== 'applied')
      problems.push(`the large reload did not apply: ${JSON.stringify(r).slice(0, 300)}`);
    for (const [label, f] of [
      ['idle', idle],
      ['during the reload', during],
    ] as const) {
      const problem = failuresOf(label, f);
      if (problem !== null) problems.push(problem);
    }
    const ratio = round(during.latency_ms.p99Ms / idle.latency_ms.p99Ms, 3);
    const loop = duringLoop as LoopDelay | null;
    const row = (label: string, f: typeof idle, l: LoopDelay | null) => [
      label,
      f.req_per_s,
      f.latency_ms.p50Ms,
      f.latency_ms.p99Ms,
      f.latency_ms.maxMs,
      f.ok,
      f.errors + f.non2xx,
      l?.p99Ms ?? '-',
      l?.maxMs ?? '-',
    ];
    return {
      figures: {
        config_bytes: large.bytes,
        config_routes: large.routes,
        reload_s: reloadS,
        reload_duration_ms: r?.duration_ms ?? null,
        idle,
        during_reload: during,
        p99_ratio: ratio,
        event_loop_delay_ms: { idle: idleLoop, during_reload: loop },
      },
      targets: [checkTarget('p99 during a reload of the largest config / idle p99', ratio, '<=', P99_RATIO_TARGET, 'x')],
      tables: [
        renderTable(
          `c=${CONCURRENCY}; reload of ${large.routes} routes (${(large.bytes / 1048576).toFixed(2)} MiB) took ${reloadS} s (ms)`,
          ['run', 'req/s', 'p50', 'p99', 'max', '2xx', 'failed', 'loop p99', 'loop max'],
          [row('idle', idle, idleLoop), row('during the reload', during, loop)],
        ),
      ],
      problems,
    };
  },
};
