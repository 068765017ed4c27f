import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CompiledQuery, type Transaction } from 'kysely';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Database } from './engine.js';
import {
  CACHE_HIT,
  type CopyBatch,
  CopyText,
  copyLines,
  type LedgerRow,
  LOSS_ENDPOINT,
  lossRow,
  RAW_FIELDS,
  ROLLUP_SOURCE_FIELDS,
  type RollupSource,
  rawRow,
  rollupsOf,
} from './ledger-rows.js';
import { preparePartitions, pruneUsage, utcDay } from './ledger-upkeep.js';
import type { Tables, UsageDailyTable, UsageRequestsTable } from './tables.js';

// The usage ledger's writer. The request path pushes one row into a bounded in-memory
// queue and never waits; a loop writes the queue in batches, each batch's raw rows and its
// daily rollups in one transaction, so the rollups always equal the raw rows they came
// from. A database that fails keeps its batch queued and is retried with backoff; when the
// queue is full a row is dropped and counted, and once writing works again one row (endpoint
// `ledger`, request_id `lost-<count>`) says how many were lost.
//
// A batch whose COMMIT reached the database but whose answer did not (a crash, a failover,
// a cut connection) is retried, and must not count twice: each row carries an entry_id this
// writer gives it once (its random name and the row's place in the queue), the same on every
// retry, and a retry inserts it only if its (day, entry_id) is new; the rollups add only the
// rows actually inserted, in the same transaction. A batch's first attempt cannot meet rows
// of its own, so it takes the cheaper path (straight in, rollups summed here); only a retry
// pays for the check (on Postgres a staging table, on SQLite a RETURNING per statement).

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
/**
 * Rows per transaction at most: a long outage's backlog is written in steps, not one huge
 * commit. SQLite's steps are small because each one runs on the event loop (better-sqlite3
 * is synchronous): about 1.5 ms per 250 rows, then requests get their turn before the next.
 */
const MAX_TRANSACTION_ROWS = { sqlite: 250, postgres: 8000 } as const;
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
  /** This writer's name in entry ids, and the number of the row at #queue[#head]. */
  readonly #writer = randomBytes(6).toString('base64url');
  #headEntry = 0;
  /** The loss row a failed batch carried, carried again unchanged by its retry. */
  #loss: { readonly count: number; readonly entryId: string } | null = null;
  #losses = 0;
  /** A batch failed since the last one written: the next attempt must skip rows already there. */
  #retrying = false;
  /** A COMMIT was sent and not answered since the last batch written: the database may hold the head rows and #loss. */
  #uncertain = false;
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
  /** Postgres: where each batch's COPY text is encoded (one batch writes at a time). */
  readonly #copyText = new CopyText();

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
    this.#headEntry += left;
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
      const take = Math.min(this.depth, MAX_TRANSACTION_ROWS[this.#database.engine]);
      const rows = this.#queue.slice(this.#head, this.#head + take);
      if (this.#loss === null && this.#unsummarized > 0) {
        this.#losses += 1;
        this.#loss = { count: this.#unsummarized, entryId: `${this.#writer}-lost-${this.#losses.toString(36)}` };
      }
      const loss = this.#loss;
      try {
        await this.#write(rows, this.#headEntry, loss, this.#retrying);
      } catch (err) {
        // Nothing of a batch that failed before its COMMIT was sent is written: its retry
        // summarizes every loss so far in one row. After a COMMIT whose answer was lost, every
        // retry until one is written must carry the same loss row, or the loss could count twice.
        if (err instanceof CommitAnswerLost) this.#uncertain = true;
        if (!this.#uncertain) this.#loss = null;
        this.#retrying = true;
        this.#backoffMs = Math.min(BACKOFF_MAX_MS, this.#backoffMs === 0 ? BACKOFF_FIRST_MS : this.#backoffMs * 2);
        this.#retryAtMs = performance.now() + this.#backoffMs;
        this.#onProblem(
          `usage ledger batch of ${rows.length} rows not written (kept, retried in ${this.#backoffMs} ms): ${(err as Error).message}`,
        );
        return;
      }
      this.#backoffMs = 0;
      this.#retrying = false;
      this.#uncertain = false;
      this.#head += take;
      this.#headEntry += take;
      this.#loss = null;
      this.#unsummarized -= loss?.count ?? 0;
      this.#written += take + (loss === null ? 0 : 1);
      if (this.#head === this.#queue.length) {
        this.#queue = [];
        this.#head = 0;
      } else if (this.#head > COMPACT_AFTER) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      // Let the requests that arrived during a synchronous SQLite step in before the next.
      if (this.#database.engine === 'sqlite' && this.depth > 0) await new Promise((r) => setImmediate(r));
    }
  }

  /**
   * One transaction: the raw rows (and a loss row), and their rollups added to the days'
   * totals; on a retry only the rows that are new, and their rollups. Postgres takes the raw
   * rows by COPY, its cheapest way in for both sides (no statement to parse and plan, a
   * compact text stream), and the rollups by one upsert over a JSON parameter; a retry COPYs
   * into a temporary table (COPY has no ON CONFLICT), and one statement moves the new rows in
   * and adds their rollups. SQLite gets fixed-size multi-row statements, each prepared once
   * (the statement cache in engine.ts), a retry's returning what they inserted; its json_each
   * would reparse each element per field and cost more than it saves.
   */
  async #write(
    rows: readonly LedgerRow[],
    firstEntry: number,
    loss: { count: number; entryId: string } | null,
    retry: boolean,
  ): Promise<void> {
    const entryIdOf = (i: number): string => `${this.#writer}-${(firstEntry + i).toString(36)}`;
    const pool = this.#database.pgPool;
    if (pool !== null) {
      return copyBatch(pool, copyLines(rows, entryIdOf, loss === null ? null : { ...loss, atMs: this.#now() }, this.#copyText), retry);
    }
    const raw = rows.map((r, i) => rawRow(r, entryIdOf(i)));
    if (loss !== null) raw.push(lossRow(this.#now(), loss.count, loss.entryId));
    await this.#database.db.transaction().execute(async (tx) => {
      let added: readonly RollupSource[] = raw;
      if (retry) added = await insertChunks<UsageRequestsTable, RollupSource>(tx, 'usage_requests', RAW_FIELDS, raw, SKIP_KNOWN_RETURNING);
      else await insertChunks(tx, 'usage_requests', RAW_FIELDS, raw, '');
      await insertChunks(
        tx,
        'usage_daily',
        ROLLUP_FIELDS,
        rollupsOf(added),
        ` on conflict (${ROLLUP_KEY.join(', ')}) do update set ${ROLLUP_SUMS_TEXT}`,
      );
    });
  }
}

const ROLLUP_KEY = ['day', 'team', 'key_id', 'model', 'provider'] as const;
const ROLLUP_COUNTS = [
  'requests',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cost_micro_usd',
  'cache_hits',
  'saved_micro_usd',
] as const;
/** Each rollup count as an aggregate of the raw rows it sums (a retry's rows, grouped in SQL). */
const ROLLUP_OF_RAW: Record<(typeof ROLLUP_COUNTS)[number], string> = {
  requests: 'count(*)',
  input_tokens: 'sum(input_tokens)',
  output_tokens: 'sum(output_tokens)',
  cache_read_tokens: 'sum(cache_read_tokens)',
  cache_write_tokens: 'sum(cache_write_tokens)',
  cost_micro_usd: 'sum(cost_micro_usd)',
  cache_hits: `count(*) filter (where cache = '${CACHE_HIT}')`,
  saved_micro_usd: 'sum(saved_micro_usd)',
};
const ROLLUP_FIELDS = [...ROLLUP_KEY, ...ROLLUP_COUNTS] as const satisfies ReadonlyArray<keyof UsageDailyTable>;
const ROLLUP_SUMS_TEXT = ROLLUP_COUNTS.map((c) => `${c} = usage_daily.${c} + excluded.${c}`).join(', ');

// The batch's staging table: one per connection, emptied by every commit (and rollback).
const BEGIN_BATCH = `begin; create temp table if not exists usage_batch (like usage_requests) on commit delete rows`;
const SKIP_KNOWN_RETURNING = ` on conflict (day, entry_id) do nothing returning endpoint, ${ROLLUP_SOURCE_FIELDS.join(', ')}`;
const COPY_RAW = `copy usage_requests (${RAW_FIELDS.join(', ')}) from stdin`;
const UPSERT_ROLLUPS = `insert into usage_daily (${ROLLUP_FIELDS.join(', ')})
  select ${ROLLUP_FIELDS.join(', ')} from json_populate_recordset(null::usage_daily, $1::json)
  on conflict (${ROLLUP_KEY.join(', ')}) do update set ${ROLLUP_SUMS_TEXT}`;
const COPY_STAGED = `copy usage_batch (${RAW_FIELDS.join(', ')}) from stdin`;
const MOVE_NEW_ROWS = `with added as (
    insert into usage_requests (${RAW_FIELDS.join(', ')})
    select ${RAW_FIELDS.join(', ')} from usage_batch
    on conflict (day, entry_id) do nothing
    returning endpoint, ${ROLLUP_SOURCE_FIELDS.join(', ')})
  insert into usage_daily (${ROLLUP_FIELDS.join(', ')})
  select ${ROLLUP_KEY.join(', ')}, ${ROLLUP_COUNTS.map((c) => ROLLUP_OF_RAW[c]).join(', ')}
  from added where endpoint <> '${LOSS_ENDPOINT}' group by ${ROLLUP_KEY.join(', ')}
  on conflict (${ROLLUP_KEY.join(', ')}) do update set ${ROLLUP_SUMS_TEXT}`;

/** A batch whose COMMIT was sent but not answered: the database may hold it. */
class CommitAnswerLost extends Error {}

/**
 * Postgres: one transaction on a connection of its own. A first attempt: the raw rows by
 * COPY, the rollups by one upsert. A retry: the raw rows by COPY to staging, then the new ones
 * and their rollups by one statement.
 */
async function copyBatch(pool: pg.Pool, batch: CopyBatch, retry: boolean): Promise<void> {
  const client = await pool.connect();
  let broken: Error | undefined;
  let committing = false;
  try {
    if (retry) {
      await client.query(BEGIN_BATCH);
      await pipeline(Readable.from([batch.text]), client.query(copyFrom(COPY_STAGED)));
      await client.query(MOVE_NEW_ROWS);
    } else {
      await client.query('begin');
      await pipeline(Readable.from([batch.text]), client.query(copyFrom(COPY_RAW)));
      if (batch.rollups.length > 0) await client.query(UPSERT_ROLLUPS, [JSON.stringify(batch.rollups)]);
    }
    committing = true;
    await client.query('commit');
  } catch (err) {
    broken = err as Error;
    await client.query('rollback').catch(() => undefined);
    // A server that answered the COMMIT with an error (it has a severity) rolled back.
    if (committing && (err as { severity?: unknown }).severity === undefined) throw new CommitAnswerLost((err as Error).message);
    throw err;
  } finally {
    // A connection that failed mid-COPY is not given back for reuse. (Its 'error' event is
    // heard by the listener every pooled client gets in engine.ts.)
    client.release(broken);
  }
}

/** SQLite rows per multi-row statement: 64 x 21 parameters is far below its limit of 32766. */
const SQLITE_CHUNK = 64;

/**
 * SQLite: `rows` as statements of SQLITE_CHUNK rows, the rest one row each, so only two
 * statement texts per table ever exist; `tail` follows VALUES (an upsert's ON CONFLICT, a
 * RETURNING). Resolves to the rows the statements returned.
 */
async function insertChunks<R extends object, Back = never>(
  tx: Transaction<Tables>,
  table: string,
  fields: ReadonlyArray<keyof R & string>,
  rows: readonly R[],
  tail: string,
): Promise<Back[]> {
  const back: Back[] = [];
  const one = `(${fields.map(() => '?').join(', ')})`;
  const text = (count: number) => `insert into ${table} (${fields.join(', ')}) values ${Array(count).fill(one).join(', ')}${tail}`;
  const statements = { [SQLITE_CHUNK]: text(SQLITE_CHUNK), 1: text(1) } as Record<number, string>;
  const run = async (from: number, count: number): Promise<void> => {
    const parameters: unknown[] = [];
    for (let i = from; i < from + count; i++) {
      const row = rows[i] as R;
      for (const f of fields) parameters.push(row[f]);
    }
    const result = await tx.executeQuery<Back>(CompiledQuery.raw(statements[count] as string, parameters));
    for (const r of result.rows) back.push(r);
  };
  let at = 0;
  for (; at + SQLITE_CHUNK <= rows.length; at += SQLITE_CHUNK) await run(at, SQLITE_CHUNK);
  for (; at < rows.length; at++) await run(at, 1);
  return back;
}

const DAY_MS = 86_400_000;
