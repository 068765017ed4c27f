import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { migrate, openDatabase } from '../../src/database/index.js';

// A large usage ledger, fast: a migrated SQLite file filled straight through one prepared
// statement per table inside one transaction (seconds for a million rows, where the
// ledger's writer would take minutes); and probes that time chat completions against a
// gateway from a thread of their own, so that what the caller's own thread does (parsing
// a page of ten thousand rows) never shows up as the gateway's latency.

const DAY_MS = 86_400_000;

export interface FilledLedger {
  /** Rows in usage_daily: the groups a query by every field over the whole range returns. */
  readonly rollupRows: number;
  readonly rawRows: number;
  /** The range (UTC days, `to` exclusive) that holds every row. */
  readonly fromDay: string;
  readonly toDay: string;
}

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/**
 * Fills `path` with `rawRows` raw rows spread over the last `rawDays` days, and one rollup row
 * per day, team, key, model and provider over the last `days` days (10 teams of `keysPerTeam`
 * keys, 5 models, 2 providers), ending today.
 */
export async function fillSqliteLedger(
  path: string,
  options: { rawRows: number; rawDays: number; days: number; keysPerTeam: number },
): Promise<FilledLedger> {
  const database = openDatabase({ url: `sqlite:${path}` });
  try {
    const migrated = await migrate(database.db, database.engine);
    if (!migrated.ok) throw new Error(migrated.message);
  } finally {
    await database.close();
  }
  const file = new BetterSqlite3(path);
  const todayMs = Date.parse(`${day(Date.now())}T00:00:00Z`);
  const teams = Array.from({ length: 10 }, (_, i) => `team-${i}`);
  const models = ['model-a', 'model-b', 'model-c', 'model-d', 'model-e'];
  const providers = ['east', 'west'];
  let rollupRows = 0;
  try {
    const raw = file.prepare(
      `insert into usage_requests (at, day, request_id, team, key_id, endpoint, model, provider, candidate, input_tokens,
         output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, status, partial, duration_ms)
       values (?, ?, ?, ?, ?, '/v1/chat/completions', ?, ?, ?, ?, ?, 0, 0, ?, 200, 0, 12.5)`,
    );
    const rollup = file.prepare(
      `insert into usage_daily (day, team, key_id, model, provider, requests, input_tokens, output_tokens, cache_read_tokens,
         cache_write_tokens, cost_micro_usd) values (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?)`,
    );
    file.transaction(() => {
      const spanMs = options.rawDays * DAY_MS;
      for (let i = 0; i < options.rawRows; i++) {
        const atMs = todayMs - spanMs + Math.floor((i / options.rawRows) * spanMs);
        const at = new Date(atMs).toISOString();
        const team = teams[i % teams.length] as string;
        const provider = providers[i % 2] as string;
        raw.run(
          at,
          at.slice(0, 10),
          `req-${i}`,
          team,
          `${team}-key-${i % options.keysPerTeam}`,
          models[i % 5],
          provider,
          provider,
          100,
          20,
          450,
        );
      }
      for (let d = options.days - 1; d >= 0; d--) {
        const dayText = day(todayMs - d * DAY_MS);
        for (const team of teams) {
          for (let k = 0; k < options.keysPerTeam; k++) {
            for (const model of models) {
              for (const provider of providers) {
                rollup.run(dayText, team, `${team}-key-${k}`, model, provider, 7, 700, 140, 3150);
                rollupRows++;
              }
            }
          }
        }
      }
    })();
  } finally {
    file.close();
  }
  return { rollupRows, rawRows: options.rawRows, fromDay: day(todayMs - (options.days - 1) * DAY_MS), toDay: day(todayMs + DAY_MS) };
}

/**
 * The same ledger on Postgres, made by the server itself (generate_series), so that filling
 * a million rows costs seconds. Raw rows end yesterday: today's and tomorrow's day partitions
 * are the gateway's to make, and could not be once the default partition held rows of those days.
 */
export async function fillPostgresLedger(
  url: string,
  options: { rawRows: number; rawDays: number; days: number; keysPerTeam: number },
): Promise<FilledLedger> {
  const database = openDatabase({ url });
  try {
    const migrated = await migrate(database.db, database.engine);
    if (!migrated.ok) throw new Error(migrated.message);
  } finally {
    await database.close();
  }
  const todayMs = Date.parse(`${day(Date.now())}T00:00:00Z`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const spanMs = options.rawDays * DAY_MS;
    await client.query(
      `insert into usage_requests (at, day, request_id, team, key_id, endpoint, model, provider, candidate, input_tokens,
         output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, status, partial, duration_ms)
       select to_char(t, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), to_char(t, 'YYYY-MM-DD'), 'req-' || i, 'team-' || (i % 10),
         'team-' || (i % 10) || '-key-' || (i % $4::int), '/v1/chat/completions', 'model-' || chr(97 + (i % 5)),
         case when i % 2 = 0 then 'east' else 'west' end, 'east', 100, 20, 0, 0, 450, 200, 0, 12.5
       from generate_series(0, $1::int - 1) as i,
         lateral (select to_timestamp(($2::bigint + floor(i::float8 / $1 * $3::bigint)) / 1000.0) at time zone 'UTC' as t) as at_time`,
      [options.rawRows, todayMs - DAY_MS - spanMs, spanMs, options.keysPerTeam],
    );
    const inserted = await client.query(
      `insert into usage_daily (day, team, key_id, model, provider, requests, input_tokens, output_tokens, cache_read_tokens,
         cache_write_tokens, cost_micro_usd)
       select to_char(to_timestamp(($1::bigint - d::bigint * ${DAY_MS}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD'),
         'team-' || t, 'team-' || t || '-key-' || k, 'model-' || chr(97 + m), p, 7, 700, 140, 0, 0, 3150
       from generate_series(0, $2::int - 1) as d, generate_series(0, 9) as t, generate_series(0, $3::int - 1) as k,
         generate_series(0, 4) as m, (values ('east'), ('west')) as providers(p)`,
      [todayMs, options.days, options.keysPerTeam],
    );
    await client.query('analyze usage_daily');
    return {
      rollupRows: inserted.rowCount ?? 0,
      rawRows: options.rawRows,
      fromDay: day(todayMs - (options.days - 1) * DAY_MS),
      toDay: day(todayMs + DAY_MS),
    };
  } finally {
    await client.end();
  }
}

/** Milliseconds each probe took, in the order they were sent. */
export interface ProbeRun {
  stop(): Promise<number[]>;
}

/**
 * Chat completions against `url`, one at a time with `gapMs` between them, from a worker
 * thread, until stopped. A probe that does not answer 200 ends the run with an error.
 */
export function startProbes(url: string, model: string, gapMs: number): ProbeRun {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { url, model, gapMs } = workerData;
    const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'probe' }] });
    let stopped = false;
    parentPort.on('message', () => { stopped = true; });
    (async () => {
      const took = [];
      while (!stopped) {
        const started = performance.now();
        const res = await fetch(url + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.arrayBuffer();
        took.push(performance.now() - started);
        if (res.status !== 200) throw new Error('a probe answered ' + res.status);
        await new Promise((r) => setTimeout(r, gapMs));
      }
      parentPort.postMessage(took);
    })().catch((err) => { throw err; });
  `;
  const worker = new Worker(code, { eval: true, workerData: { url, model, gapMs } });
  const result = new Promise<number[]>((resolve, reject) => {
    worker.once('message', (took: number[]) => resolve(took));
    worker.once('error', reject);
    worker.once('exit', () => reject(new Error('the probe thread ended without its figures')));
  });
  // Handled when stop() awaits it; a failure before then must not end the test process on its own.
  result.catch(() => undefined);
  return {
    async stop() {
      worker.postMessage('stop');
      try {
        return await result;
      } finally {
        await worker.terminate();
      }
    },
  };
}

/** The q-quantile (0-1) of `values`, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}
