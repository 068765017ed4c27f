import { postgresDatabase } from '../../test/support/databases.js';
import { Fleet, type GatewayProcess } from '../lib/fleet.js';
import { BENCH_MODEL, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { percentile, round } from '../lib/percentiles.js';
import { checkTarget, type Scenario, type ScenarioContext, type ScenarioReport, type TargetCheck } from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';
import { type BurstFigures, type Replica, topologyBurst } from '../lib/topology-burst.js';
import { adminWrite, chatStatus, type Poll, pollUntil, rebuildDurations } from '../lib/topology-calls.js';

// How long a route written through the admin API takes to serve, on the replica that took the
// write and on a second replica of the same Postgres database (which hears of it by NOTIFY,
// `database.recheck_ms` left at its default): from `POST /admin/v1/routes` (a new route, naming
// the file's provider) to the new model's first 200 on each, one write after the other, with
// 10 and with 5,000 routes in the config file. A topology write rebuilds the whole generation,
// so unlike a key write the time grows with the routes; the target is the second replica
// within 1 s at p99. Then 100 topology writes (routes and prices created, patched, deleted) on
// both replicas while chat requests for routes that exist throughout go to both: none may fail.
const SECOND_REPLICA_TARGET_MS = 1000;
const SIZES = [10, 5000] as const;
const MIN_SAMPLES = 20;
const MAX_SAMPLES = 50;
const WARMUP_WRITES = 3;
const BURST_WRITES = 100;
/** The second replica is polled this often: the figure's resolution, without crowding its rebuild. */
const POLL_GAP_MS = 5;
/** A write that has not served on a replica by then is a problem, not a slow figure (the version re-check is every 5 s). */
const SERVE_WITHIN_MS = 15_000;
const PROVIDER = 'bench';
/** A database route made before the burst and left alone: it must serve throughout, as the file's does. */
const STEADY_MODEL = 'steady';

interface SizeFigures {
  readonly routes: number;
  readonly samples: number;
  readonly write_ms: Quantiles;
  readonly same_replica_ms: Quantiles;
  readonly second_replica_ms: Quantiles;
  /** Each replica's own duration_ms of its last (up to 20) topology rebuilds, creates and deletes alike. */
  readonly rebuild_ms: { readonly a: Quantiles; readonly b: Quantiles };
  /** The writes' `x-switchyard-reload` values, counted. */
  readonly reload_headers: Readonly<Record<string, number>>;
  /** Writes whose route the writing replica did not serve on the first request after its answer. */
  readonly not_served_at_once: number;
  readonly burst: BurstFigures | null;
}

interface Sample {
  readonly write: number;
  readonly same: number;
  readonly second: number;
  /** The write's `x-switchyard-reload`. */
  readonly reload: string;
  /** Whether the writing replica served the first request sent after its answer. */
  readonly servedAtOnce: boolean;
}

interface Quantiles {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export const topologyWrite: Scenario = {
  name: 'topology-write',
  summary:
    "POST /admin/v1/routes to the new route's first 200 on the writing and on a second replica (Postgres), at 10 and 5,000 routes; 100 topology writes under chat load",
  // Starts, the latency samples (about 4x --duration a size), and the burst: 100 rebuilds of 5,000 routes take a minute or more.
  estimateS: (d) => 125 + SIZES.length * 4 * d,
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const problems: string[] = [];
    const mock = await ctx.fleet.startMock(PROVIDER);
    const sizes: SizeFigures[] = [];
    for (const routes of SIZES) {
      const db = await postgresDatabase();
      if ('skip' in db) {
        problems.push(db.skip);
        break;
      }
      // A fleet of the pair's own, stopped before its database is dropped under it.
      const pair = new Fleet(`topology-write-${routes}`);
      try {
        sizes.push(await measureSize(ctx, pair, routes, mock.baseUrl, db.url, problems));
        problems.push(...pair.casualties());
      } finally {
        await pair.stop();
        pair.removeDir();
        await db.drop().catch((err: unknown) => problems.push(`dropping the database: ${(err as Error).message}`));
      }
    }
    return report(sizes, problems);
  },
};

function config(routes: number, mockUrl: string, databaseUrl: string): Record<string, unknown> {
  const table: Record<string, unknown> = { [BENCH_MODEL]: { candidates: [{ provider: PROVIDER }] } };
  // A fresh object each: one shared object would be written as YAML aliases.
  for (let i = 1; i < routes; i += 1) table[`file-model-${i}`] = { candidates: [{ provider: PROVIDER }] };
  return {
    ...gatewayConfig({ providers: { [PROVIDER]: mockProvider(mockUrl) }, routes: table, accessLog: false, admin: true }),
    database: { url: databaseUrl },
  };
}

const replicaOf = (name: string, gw: GatewayProcess): Replica => ({ name, url: gw.url, adminUrl: gw.adminUrl as string });

async function measureSize(
  ctx: ScenarioContext,
  pair: Fleet,
  routes: number,
  mockUrl: string,
  databaseUrl: string,
  problems: string[],
): Promise<SizeFigures> {
  ctx.progress(`${routes} routes: two gateways on one Postgres database`);
  const options = { cpuProfileDir: ctx.cpuProfileDir };
  // One after the other: the first migrates the schema.
  const a = replicaOf('a', await pair.startGateway(`topology-${routes}-a`, config(routes, mockUrl, databaseUrl), options));
  const b = replicaOf('b', await pair.startGateway(`topology-${routes}-b`, config(routes, mockUrl, databaseUrl), options));

  const samples: Sample[] = [];
  const budgetMs = ctx.durationS * 4000;
  const started = performance.now();
  ctx.progress(
    `${routes} routes: ${WARMUP_WRITES} warm-up writes, then ${MIN_SAMPLES}-${MAX_SAMPLES} measured (about ${budgetMs / 1000} s)`,
  );
  for (let i = 0; i < WARMUP_WRITES + MAX_SAMPLES; i++) {
    if (i >= WARMUP_WRITES + MIN_SAMPLES && performance.now() - started > budgetMs) break;
    const sample = await writeAndServe(a, b, `written-${i}`);
    if (typeof sample === 'string') {
      problems.push(`${routes} routes, write ${i + 1}: ${sample}`);
      break;
    }
    if (i >= WARMUP_WRITES) samples.push(sample);
  }

  // Read before the burst, whose reloads would push the samples' out of the history.
  const rebuilds = { a: quantiles(await rebuildDurations(a.adminUrl)), b: quantiles(await rebuildDurations(b.adminUrl)) };
  const notAtOnce = samples.filter((s) => !s.servedAtOnce).length;
  if (notAtOnce > 0)
    problems.push(
      `${routes} routes: ${notAtOnce} of ${samples.length} writes did not serve on the writing replica's first request after its answer`,
    );
  let burst: BurstFigures | null = null;
  if (samples.length > 0) {
    ctx.progress(`${routes} routes: ${BURST_WRITES} topology writes on both replicas under chat load`);
    const steady = await writeAndServe(a, b, STEADY_MODEL, true);
    if (typeof steady === 'string') problems.push(`${routes} routes, the steady route: ${steady}`);
    else burst = await topologyBurst([a, b], PROVIDER, [BENCH_MODEL, STEADY_MODEL], BURST_WRITES, problems);
  }
  return {
    routes,
    samples: samples.length,
    write_ms: quantiles(samples.map((s) => s.write)),
    same_replica_ms: quantiles(samples.map((s) => s.same)),
    second_replica_ms: quantiles(samples.map((s) => s.second)),
    rebuild_ms: rebuilds,
    reload_headers: countOf(samples.map((s) => s.reload)),
    not_served_at_once: notAtOnce,
    burst,
  };
}

/**
 * Creates the route `model` on replica a and times its first 200 on a (asked once a has
 * answered the write: it applies a write before answering) and on b (asked from the moment
 * the write is sent, every POLL_GAP_MS). Then, unless `keep`, deletes it and waits until
 * neither serves it, so every sample starts from the same topology.
 */
async function writeAndServe(a: Replica, b: Replica, model: string, keep = false): Promise<Sample | string> {
  const poll: Poll = { stopped: false };
  const started = performance.now();
  const onB = pollUntil(b.url, model, 200, 404, { gapMs: POLL_GAP_MS, withinMs: SERVE_WITHIN_MS, poll });
  const w = await adminWrite(a.adminUrl, 'POST', 'routes', { id: model, candidates: [{ provider: PROVIDER }] });
  if (w.status !== 201) {
    poll.stopped = true;
    await onB;
    return `POST /admin/v1/routes answered ${w.status}: ${w.text.slice(0, 300)}`;
  }
  // The writing replica applies a write before it answers: its very first request must be served.
  const first = await chatStatus(a.url, model);
  const onA = first === 200 ? performance.now() : await pollUntil(a.url, model, 200, 404, { gapMs: 1, withinMs: SERVE_WITHIN_MS });
  const servedB = await onB;
  if (typeof onA === 'string') return `replica a: ${onA}`;
  if (typeof servedB === 'string') return `replica b: ${servedB}`;
  const sample = { write: w.ms, same: onA - started, second: servedB - started, reload: w.reload ?? 'none', servedAtOnce: first === 200 };
  if (keep) return sample;
  const gone = await adminWrite(a.adminUrl, 'DELETE', `routes/${model}`);
  if (gone.status !== 204) return `DELETE /admin/v1/routes/${model} answered ${gone.status}: ${gone.text.slice(0, 300)}`;
  for (const r of [a, b]) {
    const out = await pollUntil(r.url, model, 404, 200, { gapMs: POLL_GAP_MS, withinMs: SERVE_WITHIN_MS });
    if (typeof out === 'string') return `replica ${r.name}, after the delete: ${out}`;
  }
  return sample;
}

const headers = (counts: Readonly<Record<string, number>>): string =>
  Object.entries(counts)
    .map(([v, n]) => `${v} ${n}`)
    .join(', ');

function countOf(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

function quantiles(values: readonly number[]): Quantiles {
  const sorted = Float64Array.from(values).sort();
  const at = (q: number): number => round(percentile(sorted, q), 1);
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}

function report(sizes: readonly SizeFigures[], problems: string[]): ScenarioReport {
  const targets: TargetCheck[] = [];
  for (const s of sizes) {
    targets.push(
      checkTarget(`second replica, first 200, p99, ${s.routes} routes`, s.second_replica_ms.p99, '<=', SECOND_REPLICA_TARGET_MS, 'ms'),
    );
  }
  for (const s of sizes) {
    if (s.burst === null) continue;
    targets.push(checkTarget(`failed chat requests during ${s.burst.writes} writes, ${s.routes} routes`, s.burst.chat.failed, '<=', 0, ''));
  }
  const latency = renderTable(
    "topology write: POST /admin/v1/routes to the new route's first 200 on the writing replica a (same) and on b (second), ms; write: the POST's round trip; rebuild: each replica's own reload duration_ms",
    [
      'routes',
      'samples',
      'write p50',
      'write p99',
      'same p50',
      'same p99',
      'second p50',
      'second p99',
      'second max',
      'rebuild p50 a/b',
      'x-switchyard-reload',
    ],
    sizes.map((s) => [
      s.routes,
      s.samples,
      s.write_ms.p50,
      s.write_ms.p99,
      s.same_replica_ms.p50,
      s.same_replica_ms.p99,
      s.second_replica_ms.p50,
      s.second_replica_ms.p99,
      s.second_replica_ms.max,
      `${s.rebuild_ms.a.p50}/${s.rebuild_ms.b.p50}`,
      headers(s.reload_headers),
    ]),
  );
  const burst = renderTable(
    `${BURST_WRITES} topology writes (routes and prices created, patched, deleted; alternating replicas) under chat load on both`,
    ['routes', 'writes 2xx', 'write p50 ms', 'write p99 ms', 'x-switchyard-reload', 'burst s', 'chat served', 'chat failed'],
    sizes.flatMap((s) =>
      s.burst === null
        ? []
        : [
            [
              s.routes,
              `${s.burst.writes_applied}/${s.burst.writes}`,
              s.burst.write_ms.p50,
              s.burst.write_ms.p99,
              headers(s.burst.reload_headers),
              s.burst.burst_s,
              s.burst.chat.served,
              s.burst.chat.failed,
            ],
          ],
    ),
  );
  return {
    figures: {
      database: 'postgres',
      recheck_ms: 'default (5000)',
      poll_gap_ms: POLL_GAP_MS,
      sizes: Object.fromEntries(sizes.map((s) => [String(s.routes), s])),
    },
    targets,
    tables: [latency, burst],
    problems,
  };
}
