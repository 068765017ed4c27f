import { sql } from 'kysely';
import type { Database } from './engine.js';
import { chunks, type LedgerRow, lossRow, rawRow, rollupsOf } from './ledger-rows.js';
import { preparePartitions, pruneUsage, utcDay } from './ledger-upkeep.js';
import type { UsageDailyTable, UsageRequestsTable } from './tables.js';

// The usage ledger's writer. The request path pushes one row into a bounded in-memory
// queue and never waits; a loop writes the queue in batches, each batch's raw rows and its
// daily rollups in one transaction, so the rollups always equal the raw rows they came
// from. A database that fails keeps its batch queued and is retried with backoff; when the
// queue is full a row is dropped and counted, and once writing works again one row (endpoint
// `ledger`, request_id `lost-<count>`) says how many were lost.

export interface LedgerOptions {
  /** Rows held in memory at most (`database.ledger_queue`); past it a row is dropped and counted. */
  readonly queueRows: number;
  /** Raw rows older than this many days are pruned (`database.usage_retention_days`); rollups are kept. */
  readonly retentionDays: number;
  readonly now?: () => number;
  /** How often the queue is written; sooner when BATCH_ROWS wait. */
  readonly flushMs?: number;
  /** Rows that will never be written (dropped at a full queue, or left at close). */
  readonly onLost?: (rows: number) => void;
  /** A batch or an upkeep step that failed; the ledger goes on. */
  readonly onProblem?: (message: string) => void;
}

/** Rows waiting that start a write before the next tick. */
export const BATCH_ROWS = 1000;
/** Rows per transaction at most: a long outage's backlog is written in steps, not one huge commit. */
const MAX_TRANSACTION_ROWS = 8000;
/** Bound parameters per statement: SQLite's limit (32766 since 3.32; better-sqlite3 12 bundles 3.5x) and Postgres's (65535). */
const MAX_PARAMETERS = { sqlite: 32_766, postgres: 65_535 } as const;
const RAW_COLUMNS = 17;
const ROLLUP_COLUMNS = 11;
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 10_000;
const UPKEEP_EVERY_MS = 3_600_000;
/** Past this many written rows at the head of the queue, the array is cut down to what still waits. */
const COMPACT_AFTER = 16_384;

export class Ledger {
  readonly #database: Database;
  readonly #capacity: number;
  readonly #retentionDays: number;
  readonly #now: () => number;
  readonly #flushMs: number;
  readonly #onLost: (rows: number) => void;
  readonly #onProblem: (message: string) => void;
  // The queue is #queue[#head..]: writing advances #head only after the commit, so a
  // failed batch is still there for the retry.
  #queue: LedgerRow[] = [];
  #head = 0;
  /** Lost rows no loss row has counted yet. */
  #unsummarized = 0;
  #lost = 0;
  #maxDepth = 0;
  #written = 0;
  #writing: Promise<void> | null = null;
  #retryAtMs = 0;
  #backoffMs = 0;
  #soon = false;
  #closed = false;
  #tick: NodeJS.Timeout | null = null;
  #upkeep: NodeJS.Timeout | null = null;

  constructor(database: Database, options: LedgerOptions) {
    this.#database = database;
    this.#capacity = options.queueRows;
    this.#retentionDays = options.retentionDays;
    this.#now = options.now ?? Date.now;
    this.#flushMs = options.flushMs ?? 200;
    this.#onLost = options.onLost ?? (() => undefined);
    this.#onProblem = options.onProblem ?? (() => undefined);
  }

  /** Rows waiting to be written. */
  get depth(): number {
    return this.#queue.length - this.#head;
  }

  /** The deepest the queue has been. */
  get maxDepth(): number {
    return this.#maxDepth;
  }

  /** Rows lost since start (dropped at a full queue or left at close). */
  get lost(): number {
    return this.#lost;
  }

  /** Rows committed since start, loss rows included. */
  get written(): number {
    return this.#written;
  }

  /** Day partitions ahead (awaited: rows written next need them), retention in the background, then the loops. */
  async start(): Promise<void> {
    await this.#preparePartitions();
    void this.#prune();
    this.#tick = setInterval(() => void this.flush(), this.#flushMs);
    this.#tick.unref();
    this.#upkeep = setInterval(() => void this.upkeep(), UPKEEP_EVERY_MS);
    this.#upkeep.unref();
  }

  /** Queues one row: O(1), never waits, never throws. A full queue drops the row and counts it. */
  record(row: LedgerRow): void {
    const depth = this.#queue.length - this.#head;
    if (depth >= this.#capacity || this.#closed) {
      this.#lose(1);
      return;
    }
    this.#queue.push(row);
    if (depth >= this.#maxDepth) this.#maxDepth = depth + 1;
    if (depth + 1 >= BATCH_ROWS && this.#writing === null && !this.#soon) {
      this.#soon = true;
      setImmediate(() => {
        this.#soon = false;
        void this.flush();
      });
    }
  }

  /** Writes what waits (unless a failed batch's backoff has not run out); resolves when that write is over. */
  flush(): Promise<void> {
    this.#writing ??= this.#writeAll().finally(() => {
      this.#writing = null;
    });
    return this.#writing;
  }

  /** Creates the coming day partitions (Postgres) and prunes raw rows past the retention. */
  async upkeep(): Promise<void> {
    await this.#preparePartitions();
    await this.#prune();
  }

  async #preparePartitions(): Promise<void> {
    if (this.#database.engine !== 'postgres') return;
    const nowMs = this.#now();
    try {
      for (const problem of await preparePartitions(this.#database, [utcDay(nowMs), utcDay(nowMs + DAY_MS)])) this.#onProblem(problem);
    } catch (err) {
      this.#onProblem(`usage ledger partitions not prepared: ${(err as Error).message}`);
    }
  }

  async #prune(): Promise<void> {
    try {
      await pruneUsage(this.#database, utcDay(this.#now() - this.#retentionDays * DAY_MS));
    } catch (err) {
      this.#onProblem(`usage ledger retention failed: ${(err as Error).message}`);
    }
  }

  /** Stops the loops and writes what it can within `boundMs`; what is left is counted lost. */
  async close(boundMs = 5000): Promise<void> {
    this.#closed = true;
    if (this.#tick !== null) clearInterval(this.#tick);
    if (this.#upkeep !== null) clearInterval(this.#upkeep);
    const deadline = performance.now() + boundMs;
    while (this.depth > 0 && performance.now() < deadline) {
      await this.flush();
      if (this.depth === 0) break;
      // A failed batch: try again until the bound, not before its backoff would have.
      await new Promise((r) => setTimeout(r, Math.min(200, Math.max(0, deadline - performance.now()))));
      this.#retryAtMs = 0;
    }
    await this.#writing;
    const left = this.depth;
    this.#queue = [];
    this.#head = 0;
    if (left > 0) {
      this.#lost += left;
      this.#onLost(left);
    }
  }

  #lose(rows: number): void {
    this.#lost += rows;
    this.#unsummarized += rows;
    this.#onLost(rows);
  }

  async #writeAll(): Promise<void> {
    while (this.depth > 0 || (this.#unsummarized > 0 && !this.#closed)) {
      if (performance.now() < this.#retryAtMs) return;
      const take = Math.min(this.depth, MAX_TRANSACTION_ROWS);
      const rows = this.#queue.slice(this.#head, this.#head + take);
      const summarized = this.#unsummarized;
      try {
        await this.#write(rows, summarized);
      } catch (err) {
        this.#backoffMs = Math.min(BACKOFF_MAX_MS, this.#backoffMs === 0 ? BACKOFF_FIRST_MS : this.#backoffMs * 2);
        this.#retryAtMs = performance.now() + this.#backoffMs;
        this.#onProblem(
          `usage ledger batch of ${rows.length} rows not written (kept, retried in ${this.#backoffMs} ms): ${(err as Error).message}`,
        );
        return;
      }
      this.#backoffMs = 0;
      this.#head += take;
      this.#unsummarized -= summarized;
      this.#written += take + (summarized > 0 ? 1 : 0);
      if (this.#head === this.#queue.length) {
        this.#queue = [];
        this.#head = 0;
      } else if (this.#head > COMPACT_AFTER) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
    }
  }

  /** One transaction: the raw rows (and a loss row), and their rollups added to the days' totals. */
  async #write(rows: readonly LedgerRow[], lost: number): Promise<void> {
    const raw = rows.map(rawRow);
    if (lost > 0) raw.push(lossRow(this.#now(), lost));
    const rollups = rollupsOf(raw);
    if (this.#database.engine === 'postgres') return this.#writeArrays(raw, rollups);
    const limit = MAX_PARAMETERS[this.#database.engine];
    await this.#database.db.transaction().execute(async (tx) => {
      for (const chunk of chunks(raw, Math.floor(limit / RAW_COLUMNS))) await tx.insertInto('usage_requests').values(chunk).execute();
      for (const chunk of chunks(rollups, Math.floor(limit / ROLLUP_COLUMNS))) {
        await tx
          .insertInto('usage_daily')
          .values(chunk)
          .onConflict((oc) =>
            oc.columns(['day', 'team', 'key_id', 'model', 'provider']).doUpdateSet((eb) => ({
              requests: eb('usage_daily.requests', '+', eb.ref('excluded.requests')),
              input_tokens: eb('usage_daily.input_tokens', '+', eb.ref('excluded.input_tokens')),
              output_tokens: eb('usage_daily.output_tokens', '+', eb.ref('excluded.output_tokens')),
              cache_read_tokens: eb('usage_daily.cache_read_tokens', '+', eb.ref('excluded.cache_read_tokens')),
              cache_write_tokens: eb('usage_daily.cache_write_tokens', '+', eb.ref('excluded.cache_write_tokens')),
              cost_micro_usd: eb('usage_daily.cost_micro_usd', '+', eb.ref('excluded.cost_micro_usd')),
            })),
          )
          .execute();
      }
    });
  }

  /**
   * Postgres: each table's batch as one INSERT … SELECT FROM unnest() of one array per column,
   * so the statement has 17 parameters whatever the batch size: a VALUES list of thousands of
   * rows is mostly parse and plan work, on the database's CPU.
   */
  async #writeArrays(raw: readonly UsageRequestsTable[], rollups: readonly UsageDailyTable[]): Promise<void> {
    const column = <R, K extends keyof R>(rows: readonly R[], key: K): R[K][] => rows.map((r) => r[key]);
    await this.#database.db.transaction().execute(async (tx) => {
      await sql`insert into usage_requests (at, day, request_id, team, key_id, endpoint, model, provider, candidate,
          input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, status, partial, duration_ms)
        select * from unnest(${column(raw, 'at')}::text[], ${column(raw, 'day')}::text[], ${column(raw, 'request_id')}::text[],
          ${column(raw, 'team')}::text[], ${column(raw, 'key_id')}::text[], ${column(raw, 'endpoint')}::text[],
          ${column(raw, 'model')}::text[], ${column(raw, 'provider')}::text[], ${column(raw, 'candidate')}::text[],
          ${column(raw, 'input_tokens')}::bigint[], ${column(raw, 'output_tokens')}::bigint[],
          ${column(raw, 'cache_read_tokens')}::bigint[], ${column(raw, 'cache_write_tokens')}::bigint[],
          ${column(raw, 'cost_micro_usd')}::bigint[], ${column(raw, 'status')}::integer[], ${column(raw, 'partial')}::integer[],
          ${column(raw, 'duration_ms')}::real[])`.execute(tx);
      if (rollups.length === 0) return;
      await sql`insert into usage_daily (day, team, key_id, model, provider, requests, input_tokens, output_tokens,
          cache_read_tokens, cache_write_tokens, cost_micro_usd)
        select * from unnest(${column(rollups, 'day')}::text[], ${column(rollups, 'team')}::text[], ${column(rollups, 'key_id')}::text[],
          ${column(rollups, 'model')}::text[], ${column(rollups, 'provider')}::text[], ${column(rollups, 'requests')}::bigint[],
          ${column(rollups, 'input_tokens')}::bigint[], ${column(rollups, 'output_tokens')}::bigint[],
          ${column(rollups, 'cache_read_tokens')}::bigint[], ${column(rollups, 'cache_write_tokens')}::bigint[],
          ${column(rollups, 'cost_micro_usd')}::bigint[])
        on conflict (day, team, key_id, model, provider) do update set
          requests = usage_daily.requests + excluded.requests,
          input_tokens = usage_daily.input_tokens + excluded.input_tokens,
          output_tokens = usage_daily.output_tokens + excluded.output_tokens,
          cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
          cache_write_tokens = usage_daily.cache_write_tokens + excluded.cache_write_tokens,
          cost_micro_usd = usage_daily.cost_micro_usd + excluded.cost_micro_usd`.execute(tx);
    });
  }
}

const DAY_MS = 86_400_000;
