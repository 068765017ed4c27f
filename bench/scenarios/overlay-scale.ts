import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkConfig, type GatewayConfig } from '../../src/config/index.js';
import { parseOverlay, stableIdFor } from '../../src/contract/index.js';
import { buildGeneration } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';
import { candidatesOf } from '../../src/routing/index.js';
import { candidate, envelope } from '../../test/support/overlay.js';
import { alternate } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, type LoadFigures, type LoadRun, loadFigures, runLoad } from '../lib/load.js';
import { overlayGatewayConfig } from '../lib/overlay-config.js';
import { type LatencySummary, round, summarizeLatency } from '../lib/percentiles.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// The overlay-scale targets: parse + build time of the large overlay, and its throughput
// against a small one.
const PARSE_BUILD_TARGET_MS = 20;
const RATIO_TARGET = 0.95;
const CONCURRENCY = 32;

const MODELS = 256;
const CLUSTERS = ['east', 'west', 'central', 'north'] as const;
/** The model the load asks for sits in the middle of the big overlay's list. */
const BENCH_MODEL_INDEX = MODELS / 2;
const WARMUP_ITERATIONS = 10;
const ITERATIONS = 50;
const ADMIN_RELOADS = 10;
/** Rounds of small-big-big-small: more, shorter phases cancel more of the machine's drift. */
const ROUNDS = 2;
const SETTLE_S = 0.5;
const NAMESPACE = 'ai';

type Size = 'small' | 'big';
const LABELS: Record<Size, string> = { small: '3 candidates', big: `${MODELS * CLUSTERS.length} candidates / ${MODELS} models` };

interface InProcessFigures {
  readonly bytes: number;
  readonly candidates: number;
  readonly iterations: number;
  /** parseOverlay on the raw bytes: JSON, schema, candidate rules, RFC 8785 digest. */
  readonly parse_ms: LatencySummary;
  /** buildGeneration on the parsed overlay, credential files read, pools from a PoolRegistry. */
  readonly build_ms: LatencySummary;
  /** Parse then build, timed as one step in each iteration. */
  readonly combined_ms: LatencySummary;
}

/**
 * One candidate as a Grid-style control plane renders it: a FNV-1a stable id, two selection
 * groups per model (two clusters each), weights, a rank, a tier and a credential reference.
 */
function overlayCandidate(model: string, slot: number): Record<string, unknown> {
  const cluster = CLUSTERS[slot] as string;
  const site = `${cluster}-1`;
  return candidate(model, cluster, {
    site,
    stable_id: stableIdFor('inference_model', model, site, cluster),
    admission_state: 'new_and_existing',
    selection_group: slot < 2 ? 0 : 1,
    selection_tier: slot < 2 ? 'primary' : 'fallback',
    rank: slot,
    traffic_weight: slot % 2 === 0 ? 100 : 50,
    credential: { strategy: 'bearer_token', secretRef: { namespace: NAMESPACE, name: `${cluster}-upstream`, key: 'api-key' } },
  });
}

function modelName(i: number): string {
  return i === BENCH_MODEL_INDEX ? BENCH_MODEL : `model-${String(i).padStart(3, '0')}`;
}

/**
 * The two overlays compared. In both, BENCH_MODEL's group 0 holds the same two candidates
 * (east, west) under roundRobin, so a request does the same work in either gateway: only
 * the size of the overlay around it differs.
 */
function renderOverlays(): Record<Size, { text: string; revision: string; candidates: number }> {
  const big: Record<string, unknown>[] = [];
  for (let m = 0; m < MODELS; m++) for (let slot = 0; slot < CLUSTERS.length; slot++) big.push(overlayCandidate(modelName(m), slot));
  const small = [0, 1, 2].map((slot) => overlayCandidate(BENCH_MODEL, slot));
  const render = (candidates: Record<string, unknown>[]) => {
    const env = envelope(candidates, {
      network: 'bench-net',
      localSite: 'east',
      gateway: 'bench-gw',
      namespace: NAMESPACE,
      sourceUid: 'bench-uid',
      selectionMode: 'roundRobin',
    });
    return { text: JSON.stringify(env), revision: (env.revision as { value: string }).value, candidates: candidates.length };
  };
  return { small: render(small), big: render(big) };
}

/** One token file per cluster, where credential_mount_base/{namespace}/{name}/{key} points. */
function writeCredentials(base: string): void {
  for (const cluster of CLUSTERS) {
    const dir = join(base, NAMESPACE, `${cluster}-upstream`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'api-key'), `bench-${cluster}-upstream-credential\n`);
  }
}

/**
 * Parse and build in this process, the way the reload path runs them (the config is
 * validated once, as an overlay-triggered reload reuses the serving config). One
 * PoolRegistry across iterations, as in the gateway, where identities keep their pools.
 */
async function measureInProcess(text: string, config: GatewayConfig, expectedRoutes: number): Promise<InProcessFigures> {
  const bytes = Buffer.from(text, 'utf8');
  const registry = new PoolRegistry();
  const parseMs: number[] = [];
  const buildMs: number[] = [];
  const combinedMs: number[] = [];
  let candidates = 0;
  try {
    for (let i = 0; i < WARMUP_ITERATIONS + ITERATIONS; i++) {
      const t0 = performance.now();
      const parsed = parseOverlay(bytes);
      const t1 = performance.now();
      if (!parsed.ok) throw new Error(`the bench overlay was rejected: ${parsed.reason}: ${parsed.message}`);
      const built = buildGeneration({
        config,
        sourceHash: 'bench',
        number: i + 1,
        env: {},
        overlay: parsed.overlay,
        poolFor: (spec) => registry.acquire(spec),
      });
      const t2 = performance.now();
      if (!built.ok) throw new Error(`buildGeneration failed: ${built.issues.map((x) => `${x.path}: ${x.message}`).join('; ')}`);
      const routes = Object.values(built.generation.routes);
      if (routes.length !== expectedRoutes) throw new Error(`the generation has ${routes.length} routes, expected ${expectedRoutes}`);
      const missing = routes.flatMap((r) => [...candidatesOf(r)]).find((c) => c.credentialProblem !== null || c.credential === null);
      if (missing !== undefined) throw new Error(`candidate ${missing.stableId} has no credential: ${missing.credentialProblem}`);
      candidates = parsed.overlay.candidates.length;
      if (i < WARMUP_ITERATIONS) continue;
      parseMs.push(t1 - t0);
      buildMs.push(t2 - t1);
      combinedMs.push(t2 - t0);
    }
  } finally {
    await registry.destroyAll();
  }
  return {
    bytes: bytes.byteLength,
    candidates,
    iterations: ITERATIONS,
    parse_ms: summarizeLatency(parseMs),
    build_ms: summarizeLatency(buildMs),
    combined_ms: summarizeLatency(combinedMs),
  };
}

/**
 * Overlay scale: (a) parse + validate + digest + buildGeneration of a
 * 1024-candidate overlay over 256 models, in this process; (b) chat throughput at c=32
 * through one gateway while it serves that overlay vs a 3-candidate overlay, one mock,
 * in alternating phases; then the gateway's own reload duration for each overlay, from
 * POST /admin/reload.
 */
export const overlayScale: Scenario = {
  name: 'overlay-scale',
  summary: `parse+build of a ${MODELS * CLUSTERS.length}-candidate overlay; req/s with it vs a 3-candidate one at c=${CONCURRENCY}`,
  estimateS: (d) => 10 + ROUNDS * 4 * (d / 2 + SETTLE_S),
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const overlays = renderOverlays();
    const credentialBase = join(ctx.fleet.dir, 'grid-credentials');
    writeCredentials(credentialBase);

    ctx.progress(`in-process: parseOverlay + buildGeneration, ${WARMUP_ITERATIONS} warm-up + ${ITERATIONS} iterations per overlay`);
    // Providers that are never called: pools open no connection until a request.
    const inProcessConfig = checkConfig(
      overlayGatewayConfig({
        providers: Object.fromEntries(CLUSTERS.map((c) => [c, mockProvider('http://127.0.0.1:9/v1')])),
        overlay: { file: join(ctx.fleet.dir, 'unread.json'), credential_mount_base: credentialBase },
      }),
    );
    if (!inProcessConfig.ok) throw new Error(`bench config invalid: ${JSON.stringify(inProcessConfig.issues)}`);
    const inProcess: Record<Size, InProcessFigures> = {
      small: await measureInProcess(overlays.small.text, inProcessConfig.config, 1),
      big: await measureInProcess(overlays.big.text, inProcessConfig.config, MODELS),
    };

    // One gateway process, switched between the two overlays by POST /admin/reload: the two
    // figures then differ by the overlay alone, not by which process got the better core.
    // Its watcher is off, so nothing reloads during a measured phase.
    const mock = await ctx.fleet.startMock('bench');
    const providers = Object.fromEntries(CLUSTERS.map((c) => [c, mockProvider(mock.baseUrl)]));
    const overlayFile = join(ctx.fleet.dir, 'routing-overlay.json');
    writeFileSync(overlayFile, overlays.small.text);
    const gw = await ctx.fleet.startGateway(
      'gateway-overlay',
      overlayGatewayConfig({
        providers,
        admin: true,
        overlay: { file: overlayFile, reload: { enabled: false }, credential_mount_base: credentialBase },
      }),
      { cpuProfileDir: ctx.cpuProfileDir },
    );
    const url = `${gw.url}/v1/chat/completions`;
    const sizes = ['small', 'big'] as const;
    const reloadMs: Record<Size, number[]> = { small: [], big: [] };
    const reload = async (size: Size): Promise<void> => {
      const res = await fetch(`${gw.adminUrl}/admin/reload`, { method: 'POST' });
      const body = (await res.json()) as { result?: string; duration_ms?: number; revision?: string; errors?: unknown[] };
      if (res.status !== 200 || body.result !== 'applied' || body.revision !== overlays[size].revision) {
        throw new Error(
          `reload to the ${LABELS[size]} overlay answered ${res.status} ${body.result} revision ${body.revision}: ${JSON.stringify(body.errors).slice(0, 300)}`,
        );
      }
      reloadMs[size].push(body.duration_ms ?? Number.NaN);
    };
    const groupZero = new Set(['east', 'west'].map((c) => stableIdFor('inference_model', BENCH_MODEL, `${c}-1`, c)));
    const switchTo = async (size: Size): Promise<void> => {
      writeFileSync(overlayFile, overlays[size].text);
      await reload(size);
      const problem = await smokeTest(LABELS[size], url, overlays[size].revision, groupZero);
      if (problem !== null) throw new Error(problem);
    };

    ctx.progress(`warm-up: ${ctx.warmupS} s per overlay at c=${CONCURRENCY}`);
    for (const size of sizes) {
      await switchTo(size);
      await runLoad({ url, body: CHAT_BODY, connections: CONCURRENCY, durationS: ctx.warmupS });
    }
    const phaseS = ctx.durationS / 2;
    ctx.progress(
      `measure: ${ROUNDS} rounds of small / big / big / small, ${phaseS} s each at c=${CONCURRENCY}, a reload and ${SETTLE_S} s unmeasured before each`,
    );
    const runs: Record<Size, LoadRun[]> = { small: [], big: [] };
    for (let pass = 0; pass < ROUNDS; pass++) {
      const half = await alternate(sizes, async (size) => {
        await switchTo(size);
        // The previous generation is garbage now: its collection is the switch's cost, not the overlay's.
        await runLoad({ url, body: CHAT_BODY, connections: CONCURRENCY, durationS: SETTLE_S });
        return runLoad({ url, body: CHAT_BODY, connections: CONCURRENCY, durationS: phaseS });
      });
      for (const size of sizes) runs[size].push(...half[size]);
    }
    const load = { small: loadFigures(runs.small), big: loadFigures(runs.big) } satisfies Record<Size, LoadFigures>;
    const problems: string[] = [];
    for (const size of sizes) {
      const problem = failuresOf(`${LABELS[size]} overlay`, load[size]);
      if (problem !== null) problems.push(problem);
    }
    const ratio = round(load.big.req_per_s / load.small.req_per_s, 3);

    ctx.progress(`gateway-side reloads: ${ADMIN_RELOADS} x POST /admin/reload per overlay`);
    for (const size of sizes) {
      await switchTo(size);
      reloadMs[size].length = 0;
      for (let i = 0; i < ADMIN_RELOADS; i++) await reload(size);
    }
    const gatewayReload = { small: summarizeLatency(reloadMs.small), big: summarizeLatency(reloadMs.big) };

    const big = inProcess.big;
    const targets = [
      checkTarget(
        `parse+validate+digest+build, ${big.candidates} candidates (median)`,
        big.combined_ms.p50Ms,
        '<=',
        PARSE_BUILD_TARGET_MS,
        'ms',
      ),
      checkTarget(`req/s ${big.candidates}-candidate overlay / 3-candidate, c=${CONCURRENCY}`, ratio, '>=', RATIO_TARGET, ''),
    ];
    const stepRow = (size: Size, step: string, l: LatencySummary) => [LABELS[size], step, l.p50Ms, l.p90Ms, l.maxMs];
    const loadRow = (size: Size) => {
      const f = load[size];
      return [
        LABELS[size],
        f.req_per_s,
        f.per_run.map((r) => r.req_per_s).join(' / '),
        f.latency_ms.p50Ms,
        f.latency_ms.p99Ms,
        f.ok,
        f.errors + f.non2xx,
      ];
    };
    const tables = [
      renderTable(
        `in-process parse and build (${ITERATIONS} iterations after ${WARMUP_ITERATIONS} warm-up, ms; overlay ${big.bytes} bytes)`,
        ['overlay', 'step', 'median', 'p90', 'max'],
        sizes.flatMap((size) => [
          stepRow(size, 'parseOverlay', inProcess[size].parse_ms),
          stepRow(size, 'buildGeneration', inProcess[size].build_ms),
          stepRow(size, 'combined', inProcess[size].combined_ms),
        ]),
      ),
      renderTable(
        `throughput at c=${CONCURRENCY}, model "${BENCH_MODEL}" (${ROUNDS} x small-big-big-small, ${phaseS} s phases, ${phaseS * 2 * ROUNDS} s per overlay; latency ms)`,
        ['overlay', 'req/s', 'per run', 'p50', 'p99', '2xx', 'failed'],
        [...sizes.map(loadRow), ['big / small', ratio, '', null, null, null, null]],
      ),
      renderTable(
        `gateway-side reload duration_ms, ${ADMIN_RELOADS} x POST /admin/reload per overlay (config + overlay read, parse, build, swap)`,
        ['overlay', 'reloads', 'median', 'p90', 'max'],
        sizes.map((size) => [
          LABELS[size],
          gatewayReload[size].count,
          gatewayReload[size].p50Ms,
          gatewayReload[size].p90Ms,
          gatewayReload[size].maxMs,
        ]),
      ),
    ];
    return {
      figures: {
        models: MODELS,
        concurrency: CONCURRENCY,
        duration_s_per_overlay: phaseS * 2 * ROUNDS,
        cpu_profiled: ctx.cpuProfileDir !== null,
        revisions: { small: overlays.small.revision, big: overlays.big.revision },
        in_process: inProcess,
        load,
        throughput_ratio_big_small: ratio,
        gateway_reload_ms: gatewayReload,
      },
      targets,
      tables,
      problems,
    };
  },
};

async function smokeTest(label: string, url: string, revision: string, expectedCandidates: ReadonlySet<string>): Promise<string | null> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: CHAT_BODY });
    const text = await res.text();
    if (res.status !== 200) return `gateway with ${label}: smoke request answered ${res.status}: ${text.slice(0, 300)}`;
    const served = res.headers.get('x-switchyard-revision');
    if (served !== revision) return `gateway with ${label}: x-switchyard-revision ${served}, expected ${revision}`;
    const chosen = res.headers.get('x-switchyard-candidate');
    if (chosen === null || !expectedCandidates.has(chosen))
      return `gateway with ${label}: x-switchyard-candidate ${chosen} is not in selection group 0`;
    return null;
  } catch (err) {
    return `gateway with ${label}: smoke request failed: ${(err as Error).message}`;
  }
}
