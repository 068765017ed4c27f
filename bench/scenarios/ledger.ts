import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { Ledger, type LedgerRow, migrate, openDatabase, usageTotals } from '../../src/database/index.js';
import { hashKey } from '../../src/governance/index.js';
import { alternate, roundsFor } from '../lib/alternation.js';
import { BENCH_MODEL, CHAT_BODY, gatewayConfig, mockProvider } from '../lib/gateway-config.js';
import { failuresOf, loadFigures, runLoad } from '../lib/load.js';
import { median, round } from '../lib/percentiles.js';
import { cpuMsOf, cpuUsedDuring } from '../lib/proc-cpu.js';
import {
  checkTarget,
  monotonicUs,
  type ProfileWindow,
  type Scenario,
  type ScenarioContext,
  type ScenarioReport,
  type TargetCheck,
} from '../lib/scenario.js';
import { renderTable } from '../lib/table.js';

// The usage ledger's cost and capacity: a gateway with the ledger on (SQLite, Postgres)
// against the same gateway with it off, same run; the writer alone taking 1 M rows at a
// steady rate, in process; and a month's totals by team and model over those rows.
const RATIO_TARGET = 0.95;
const BENCH_KEY = 'sy-bench-ledger-key-not-a-secret';
const INGEST_ROWS = 1_000_000;
/** The steady rate the writer is offered: several gateways' worth of requests. */
const INGEST_ROWS_PER_S = 25_000;
const INGEST_TICK_MS = 10;
const TEAMS = 20;
const KEYS = 400;
const MODELS = 5;
const DAY_MS = 86_400_000;
const POSTGRES_ADMIN_URL = process.env.SWITCHYARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/postgres';

type Engine = 'sqlite' | 'postgres';
type Key = 'off' | Engine;

export const ledger: Scenario = {
  name: 'ledger',
  summary: 'req/s with the usage ledger on (SQLite, Postgres) vs off; 1 M rows through the writer; a month grouped by team and model',
  estimateS: (d) => 8 + 3 * 2 * d + 2 * (INGEST_ROWS / INGEST_ROWS_PER_S + 10),
  async run(ctx: ScenarioContext): Promise<ScenarioReport> {
    const problems: string[] = [];
    const postgres = await postgresDatabase(`switchyard_bench_ledger_${process.pid}`).catch((err: unknown) => {
      problems.push(`no PostgreSQL at ${POSTGRES_ADMIN_URL}: ${(err as Error).message}`);
      return null;
    });
    try {
      const mock = await ctx.fleet.startMock('bench');
      const config = (database: string | null) => ({
        ...gatewayConfig({
          providers: { bench: mockProvider(mock.baseUrl) },
          routes: { [BENCH_MODEL]: { candidates: [{ provider: 'bench' }] } },
        }),
        teams: { bench: {} },
        keys: [{ id: 'bench', team: 'bench', sha256: hashKey(BENCH_KEY) }],
        pricing: { models: { [BENCH_MODEL]: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } } },
        ...(database === null ? {} : { database: { url: database } }),
      });
      const started: Partial<Record<Key, { url: string; pid: number }>> = {
        off: await ctx.fleet.startGateway('ledger-off', config(null), { cpuProfileDir: ctx.cpuProfileDir }),
        sqlite: await ctx.fleet.startGateway('ledger-sqlite', config(`sqlite:${join(ctx.fleet.dir, 'gateway.db')}`), {
          cpuProfileDir: ctx.cpuProfileDir,
        }),
      };
      if (postgres !== null) {
        started.postgres = await ctx.fleet.startGateway('ledger-postgres', config(postgres.url), { cpuProfileDir: ctx.cpuProfileDir });
      }
      const gateways = Object.fromEntries(Object.entries(started).map(([k, g]) => [k, g.url])) as Partial<Record<Key, string>>;
      const keys = Object.keys(gateways) as Key[];
      const spec = (k: Key, durationS: number) => ({
        url: `${gateways[k]}/v1/chat/completions`,
        body: CHAT_BODY,
        connections: 32,
        durationS,
        headers: { authorization: `Bearer ${BENCH_KEY}` },
      });
      ctx.progress(`warm-up: ${ctx.warmupS} s per gateway`);
      for (const k of keys) await runLoad(spec(k, ctx.warmupS));
      const rounds = roundsFor(ctx.durationS * 2);
      ctx.progress(`c=32: ${keys.length} gateways x ${rounds} slices of ${(ctx.durationS * 2) / rounds} s, order A-B-C-C-B-A-…`);
      // CPU each side spent during its own slices: the gateway process, and the Postgres
      // server's processes (SQLite works inside the gateway). On this machine the database
      // shares the cores with the gateway, so its CPU is taken from the gateway's throughput.
      const cpu = Object.fromEntries(keys.map((k) => [k, { gatewayMs: 0, serverMs: 0 }])) as Record<
        Key,
        { gatewayMs: number; serverMs: number }
      >;
      // Under --cpu-prof, each gateway's profile is read for its own slices only (per request).
      const windows = Object.fromEntries(keys.map((k) => [k, { spansUs: [] as Array<readonly [number, number]>, requests: 0 }]));
      const runs = await alternate(
        keys,
        async (k) => {
          const server = postgresServerCpuMs();
          const fromUs = monotonicUs();
          const { result, cpuMs } = await cpuUsedDuring([started[k]?.pid ?? null], () => runLoad(spec(k, (ctx.durationS * 2) / rounds)));
          windows[k]?.spansUs.push([fromUs, monotonicUs()]);
          if (windows[k] !== undefined) windows[k].requests += result.ok;
          cpu[k].gatewayMs += cpuMs[0] ?? 0;
          cpu[k].serverMs += cpuSince(server);
          return result;
        },
        rounds,
      );
      const load = Object.fromEntries(keys.map((k) => [k, loadFigures(runs[k])])) as Record<Key, ReturnType<typeof loadFigures>>;
      for (const k of keys) {
        const problem = failuresOf(`gateway, ledger ${k}`, load[k]);
        if (problem !== null) problems.push(problem);
      }
      const perRequest = (k: Key, ms: number) => (load[k].ok > 0 ? round((ms * 1000) / load[k].ok, 1) : null);
      const gatewayUs = (k: Key) => perRequest(k, cpu[k].gatewayMs);
      const serverUs = (k: Key) => perRequest(k, cpu[k].serverMs);
      const ratio = (k: Engine) => (load[k] === undefined ? Number.NaN : round(load[k].req_per_s / load.off.req_per_s, 3));
      const targets: TargetCheck[] = (['sqlite', 'postgres'] as const)
        .filter((k) => load[k] !== undefined)
        .map((k) => checkTarget(`throughput ratio ledger on (${k}) / off, c=32`, ratio(k), '>=', RATIO_TARGET, ''));

      const ingest: Partial<Record<Engine, IngestFigures>> = {};
      const engines: Array<[Engine, string]> = [['sqlite', `sqlite:${join(ctx.fleet.dir, 'ingest.db')}`]];
      if (postgres !== null) engines.push(['postgres', postgres.url]);
      for (const [engine, url] of engines) {
        ctx.progress(`ingest (${engine}): ${INGEST_ROWS} rows offered at ${INGEST_ROWS_PER_S} rows/s, then a month's totals`);
        ingest[engine] = await measureIngest(url, problems);
      }
      return {
        figures: {
          load,
          ratios: { sqlite: ratio('sqlite'), postgres: ratio('postgres') },
          cpu_us_per_request: Object.fromEntries(keys.map((k) => [k, { gateway: gatewayUs(k), postgres_server: serverUs(k) }])),
          ingest,
        },
        targets,
        tables: [
          renderTable(
            'gateway with the usage ledger, c=32 (ms)',
            ['ledger', 'req/s', '/off', 'gateway CPU us/req', 'postgres CPU us/req', 'p50', 'p99', '2xx', 'failed'],
            keys.map((k) => [
              k,
              load[k].req_per_s,
              k === 'off' ? 1 : ratio(k),
              gatewayUs(k) ?? '-',
              k === 'postgres' ? (serverUs(k) ?? '-') : '-',
              load[k].latency_ms.p50Ms,
              load[k].latency_ms.p99Ms,
              load[k].ok,
              load[k].errors + load[k].non2xx,
            ]),
          ),
          renderTable(
            `the writer alone: ${INGEST_ROWS} rows offered at ${INGEST_ROWS_PER_S} rows/s; a month's totals by team and model`,
            ['engine', 'rows/s written', 'max queue depth', 'lost', 'writer CPU µs/row', 'rollup rows', 'query ms (median of 5)'],
            Object.entries(ingest).map(([engine, f]) => [
              engine,
              f.rows_per_s,
              f.max_queue_depth,
              f.lost,
              f.cpu_us_per_row,
              f.rollup_rows,
              f.month_query_ms,
            ]),
          ),
        ],
        problems,
        profileWindows: Object.fromEntries(keys.map((k) => [`ledger-${k}`, windows[k] as ProfileWindow])),
      };
    } finally {
      await postgres?.drop();
    }
  },
};

interface IngestFigures {
  readonly rows: number;
  readonly offered_rows_per_s: number;
  readonly rows_per_s: number;
  readonly max_queue_depth: number;
  readonly lost: number;
  readonly rollup_rows: number;
  readonly month_query_ms: number;
  readonly month_query_groups: number;
  /**
   * This process's CPU per row while the writer took the rows (the feed loop included): the
   * writer's own cost, which on a shared machine swings far less than a gateway's throughput.
   */
  readonly cpu_us_per_row: number;
}

/**
 * The writer in this process, fed INGEST_ROWS rows spread over the last 30 days, at a
 * steady rate in ticks of INGEST_TICK_MS; the queue must stay near one tick's worth.
 */
async function measureIngest(url: string, problems: string[]): Promise<IngestFigures> {
  const database = openDatabase({ url });
  try {
    const m = await migrate(database.db, database.engine);
    if (!m.ok) throw new Error(m.message);
    const writer = new Ledger(database, { queueRows: 100_000, retentionDays: 60, onProblem: (p) => problems.push(p) });
    await writer.start();
    const startMs = Date.now() - 30 * DAY_MS;
    const perTick = (INGEST_ROWS_PER_S * INGEST_TICK_MS) / 1000;
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    let sent = 0;
    while (sent < INGEST_ROWS) {
      const due = Math.min(INGEST_ROWS, Math.floor(((performance.now() - started) / INGEST_TICK_MS + 1) * perTick));
      for (; sent < due; sent++) writer.record(rowOf(sent, startMs + Math.floor((sent * 30 * DAY_MS) / INGEST_ROWS)));
      await new Promise((r) => setTimeout(r, INGEST_TICK_MS));
    }
    await writer.close(60_000);
    const elapsedS = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (writer.lost > 0) problems.push(`ingest on ${database.engine}: ${writer.lost} rows lost`);
    const range = {
      fromDay: new Date(startMs).toISOString().slice(0, 10),
      toDay: new Date(Date.now() + DAY_MS).toISOString().slice(0, 10),
    };
    const times: number[] = [];
    let groups = 0;
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      groups = (await usageTotals(database, range, {}, ['team', 'model'])).length;
      times.push(performance.now() - t0);
    }
    const rollups = await database.db
      .selectFrom('usage_daily')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .executeTakeFirst();
    return {
      rows: INGEST_ROWS,
      offered_rows_per_s: INGEST_ROWS_PER_S,
      rows_per_s: Math.round(writer.written / elapsedS),
      max_queue_depth: writer.maxDepth,
      lost: writer.lost,
      rollup_rows: Number(rollups?.n ?? 0),
      month_query_ms: round(median(times), 2),
      month_query_groups: groups,
      cpu_us_per_row: round((cpu.user + cpu.system) / INGEST_ROWS, 2),
    };
  } finally {
    await database.close();
  }
}

function rowOf(i: number, atMs: number): LedgerRow {
  const key = i % KEYS;
  return {
    atMs,
    requestId: `bench-${i}`,
    team: `team-${key % TEAMS}`,
    keyId: `key-${key}`,
    endpoint: '/v1/chat/completions',
    model: `model-${i % MODELS}`,
    provider: 'bench',
    candidate: 'bench-1',
    inputTokens: 100 + (i % 50),
    outputTokens: 20 + (i % 30),
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costMicroUsd: 27,
    status: 200,
    partial: false,
    durationMs: 1.5,
    guardrail: null,
    cache: null,
    savedMicroUsd: 0,
  };
}

async function postgresDatabase(name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => c.query(`CREATE DATABASE ${name}`)));
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined) };
}

/** CPU used so far by each running Postgres server process (by pid), from /proc. */
function postgresServerCpuMs(): Map<number, number> {
  const used = new Map<number, number>();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return used;
  }
  for (const p of pids) {
    try {
      if (!readFileSync(`/proc/${p}/comm`, 'utf8').startsWith('postgres')) continue;
    } catch {
      continue;
    }
    const ms = cpuMsOf(Number(p));
    if (ms !== null) used.set(Number(p), ms);
  }
  return used;
}

/** CPU the Postgres processes used since `before`; a backend that started meanwhile counts from zero. */
function cpuSince(before: Map<number, number>): number {
  let ms = 0;
  for (const [pid, now] of postgresServerCpuMs()) ms += now - (before.get(pid) ?? 0);
  return ms;
}
