import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { type Compilable, type Expression, type SqlBool, sql } from 'kysely';
import type { Database } from './engine.js';
import type { LedgerRow } from './ledger-rows.js';
import { READ_BATCH_ROWS } from './read-worker.js';
import { renderRows, type TextColumn, type TextFormat } from './usage-text.js';

// Reading the ledger: totals from the daily rollups (one row per day, team, key, model and
// provider), and the raw rows, both page by page with a keyset cursor (the last row's
// sort key), so no answer is larger than a page whatever the range. A page is found in two
// steps: its bound (the key of its last row, and whether a row follows: the next cursor,
// known before the first row is sent, so a CSV answer can carry it in a header), then its
// rows, batch by batch. On SQLite both run on the read worker, off the event loop, which
// also renders the rows as the usage API writes them.

export type UsageGroup = 'day' | 'team' | 'key' | 'model' | 'provider';
export const USAGE_GROUPS: readonly UsageGroup[] = ['day', 'team', 'key', 'model', 'provider'];

const COLUMN_OF = { day: 'day', team: 'team', key: 'key_id', model: 'model', provider: 'provider' } as const;
/** The raw rows' order, and so their cursor. */
const RECORD_KEY = ['at', 'request_id'] as const;

export interface UsageFilter {
  readonly team?: string;
  readonly keyId?: string;
  readonly model?: string;
}

export interface UsageTotals {
  /** The grouped fields, by group name (`key` is the key id). */
  readonly group: Readonly<Partial<Record<UsageGroup, string>>>;
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  readonly costMicroUsd: number;
  /** Requests the response cache answered, and what their entries cost when they were made. */
  readonly cacheHits: number;
  readonly savedMicroUsd: number;
}

/** A page of one query: the cursor after it (null on the last page), and its rows as they are read. */
export interface UsagePage<T> {
  readonly next: readonly string[] | null;
  /** The fields each row has on the wire, in order. */
  readonly columns: readonly TextColumn[];
  /** The rows, batch by batch. */
  rows(): AsyncIterable<readonly T[]>;
  /** The rows as the usage API writes them, batch by batch (see renderRows). */
  text(format: TextFormat): AsyncIterable<string>;
}

const TOTAL_FIELDS: readonly TextColumn[] = [
  { name: 'requests', from: 'requests', kind: 'number' },
  { name: 'input_tokens', from: 'input_tokens', kind: 'number' },
  { name: 'output_tokens', from: 'output_tokens', kind: 'number' },
  { name: 'cache_read_tokens', from: 'cache_read_tokens', kind: 'number' },
  { name: 'cache_write_tokens', from: 'cache_write_tokens', kind: 'number' },
  { name: 'cost_usd', from: 'cost_micro_usd', kind: 'usd' },
  { name: 'cache_hits', from: 'cache_hits', kind: 'number' },
  { name: 'saved_usd', from: 'saved_micro_usd', kind: 'usd' },
];

const RECORD_FIELDS: readonly TextColumn[] = [
  { name: 'at', from: 'at', kind: 'text' },
  { name: 'request_id', from: 'request_id', kind: 'text' },
  { name: 'team', from: 'team', kind: 'text' },
  { name: 'key', from: 'key_id', kind: 'text' },
  { name: 'endpoint', from: 'endpoint', kind: 'text' },
  { name: 'model', from: 'model', kind: 'text' },
  { name: 'provider', from: 'provider', kind: 'text' },
  { name: 'candidate', from: 'candidate', kind: 'text' },
  { name: 'input_tokens', from: 'input_tokens', kind: 'number' },
  { name: 'output_tokens', from: 'output_tokens', kind: 'number' },
  { name: 'cache_read_tokens', from: 'cache_read_tokens', kind: 'number' },
  { name: 'cache_write_tokens', from: 'cache_write_tokens', kind: 'number' },
  { name: 'cost_usd', from: 'cost_micro_usd', kind: 'usd' },
  { name: 'status', from: 'status', kind: 'number' },
  { name: 'partial', from: 'partial', kind: 'boolean' },
  { name: 'duration_ms', from: 'duration_ms', kind: 'number' },
  { name: 'guardrail', from: 'guardrail', kind: 'text_or_null' },
  { name: 'cache', from: 'cache', kind: 'text_or_null' },
  { name: 'saved_usd', from: 'saved_micro_usd', kind: 'usd' },
];

/** Where a page starts: after the row with this sort key (the grouped fields in `groupBy` order, or a raw row's at and request id). */
export interface UsagePageRequest {
  readonly limit: number;
  readonly after?: readonly string[];
}

type Row = Record<string, unknown>;

/** Totals of the UTC days `fromDay` (inclusive) to `toDay` (exclusive), grouped by `groupBy` in its order, one page of groups. */
export async function usageTotalsPage(
  database: Database,
  range: { readonly fromDay: string; readonly toDay: string },
  filter: UsageFilter,
  groupBy: readonly UsageGroup[],
  page: UsagePageRequest,
): Promise<UsagePage<UsageTotals>> {
  const columns = groupBy.map((g) => COLUMN_OF[g]);
  const base = (after: readonly string[] | undefined, upTo: readonly string[] | null) => {
    let q = database.db.selectFrom('usage_daily').where('day', '>=', range.fromDay).where('day', '<', range.toDay);
    if (filter.team !== undefined) q = q.where('team', '=', filter.team);
    if (filter.keyId !== undefined) q = q.where('key_id', '=', filter.keyId);
    if (filter.model !== undefined) q = q.where('model', '=', filter.model);
    // The group's fields are plain columns, so the keyset bounds apply before grouping.
    if (after !== undefined && columns.length > 0) q = q.where(keyCompare(columns, '>', after));
    if (upTo !== null) q = q.where(keyCompare(columns, '<=', upTo));
    return q;
  };
  let next: readonly string[] | null = null;
  if (columns.length > 0) {
    let q = base(page.after, null).select(columns);
    for (const c of columns) q = q.groupBy(c).orderBy(c);
    next = await pageBound(database, q.limit(2).offset(page.limit - 1), columns);
  }
  const rowsFrom = (after: readonly string[] | undefined, limit: number | null) => {
    let q = base(after, next).select((eb) => [
      eb.fn.sum<string | number>('requests').as('requests'),
      eb.fn.sum<string | number>('input_tokens').as('input_tokens'),
      eb.fn.sum<string | number>('output_tokens').as('output_tokens'),
      eb.fn.sum<string | number>('cache_read_tokens').as('cache_read_tokens'),
      eb.fn.sum<string | number>('cache_write_tokens').as('cache_write_tokens'),
      eb.fn.sum<string | number>('cost_micro_usd').as('cost_micro_usd'),
      eb.fn.sum<string | number>('cache_hits').as('cache_hits'),
      eb.fn.sum<string | number>('saved_micro_usd').as('saved_micro_usd'),
    ]);
    for (const c of columns) q = q.select(c).groupBy(c).orderBy(c);
    // With no group, an empty range still makes one row of nulls: no row is the answer.
    if (columns.length === 0) q = q.having(sql`count(*)`, '>', 0);
    return limit === null ? q : q.limit(limit);
  };
  const totalsOf = (batch: readonly Row[]): UsageTotals[] =>
    batch.map((r) => ({
      group: Object.fromEntries(groupBy.map((g) => [g, String(r[COLUMN_OF[g]])])),
      requests: Number(r.requests),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cacheReadTokens: Number(r.cache_read_tokens),
      cacheWriteTokens: Number(r.cache_write_tokens),
      costMicroUsd: Number(r.cost_micro_usd),
      cacheHits: Number(r.cache_hits),
      savedMicroUsd: Number(r.saved_micro_usd),
    }));
  const wire: TextColumn[] = [...groupBy.map((g): TextColumn => ({ name: g, from: COLUMN_OF[g], kind: 'text' })), ...TOTAL_FIELDS];
  return pageOf(database, { keys: columns, from: rowsFrom }, page, next, wire, totalsOf);
}

/** Every total of the range at once: for callers in process (tests, the bench) that know the range is small. */
export async function usageTotals(
  database: Database,
  range: { readonly fromDay: string; readonly toDay: string },
  filter: UsageFilter,
  groupBy: readonly UsageGroup[],
): Promise<UsageTotals[]> {
  const all: UsageTotals[] = [];
  let after: readonly string[] | undefined;
  // Bounded: each page moves the cursor strictly forward over a finite table.
  for (;;) {
    const page = await usageTotalsPage(
      database,
      range,
      filter,
      groupBy,
      after === undefined ? { limit: 10_000 } : { limit: 10_000, after },
    );
    for await (const batch of page.rows()) all.push(...batch);
    if (page.next === null) return all;
    after = page.next;
  }
}

/** A raw row as the usage API reads it back: the ledger's row, with its time as written (RFC 3339). */
export type UsageRecord = Omit<LedgerRow, 'atMs'> & { readonly at: string };

/** Where a page of raw rows starts: after this row, in (at, request_id) order. */
export interface UsageCursor {
  readonly at: string;
  readonly requestId: string;
}

/** Raw rows with `from <= at < to` (RFC 3339 UTC, as written), oldest first, one page. */
export async function usageRecordsPage(
  database: Database,
  range: { readonly from: string; readonly to: string },
  filter: UsageFilter,
  page: UsagePageRequest,
): Promise<UsagePage<UsageRecord>> {
  const base = (after: readonly string[] | undefined, upTo: readonly string[] | null) => {
    // The day bounds let Postgres skip the partitions outside the range.
    let q = database.db
      .selectFrom('usage_requests')
      .where('day', '>=', range.from.slice(0, 10))
      .where('day', '<=', range.to.slice(0, 10))
      .where('at', '>=', range.from)
      .where('at', '<', range.to);
    if (filter.team !== undefined) q = q.where('team', '=', filter.team);
    if (filter.keyId !== undefined) q = q.where('key_id', '=', filter.keyId);
    if (filter.model !== undefined) q = q.where('model', '=', filter.model);
    if (after !== undefined) q = q.where(keyCompare(RECORD_KEY, '>', after));
    if (upTo !== null) q = q.where(keyCompare(RECORD_KEY, '<=', upTo));
    return q.orderBy('at').orderBy('request_id');
  };
  const next = await pageBound(
    database,
    base(page.after, null)
      .select([...RECORD_KEY])
      .limit(2)
      .offset(page.limit - 1),
    RECORD_KEY,
  );
  const recordsOf = (batch: readonly Row[]): UsageRecord[] =>
    batch.map((r) => ({
      at: String(r.at),
      requestId: String(r.request_id),
      team: String(r.team),
      keyId: String(r.key_id),
      endpoint: String(r.endpoint),
      model: String(r.model),
      provider: String(r.provider),
      candidate: String(r.candidate),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cacheReadTokens: Number(r.cache_read_tokens),
      cacheWriteTokens: Number(r.cache_write_tokens),
      costMicroUsd: Number(r.cost_micro_usd),
      status: Number(r.status),
      partial: Number(r.partial) === 1,
      durationMs: Number(r.duration_ms),
      guardrail: r.guardrail == null ? null : String(r.guardrail),
      cache: r.cache == null ? null : String(r.cache),
      savedMicroUsd: Number(r.saved_micro_usd),
    }));
  const rowsFrom = (after: readonly string[] | undefined, limit: number | null) => {
    const q = base(after, next).selectAll();
    return limit === null ? q : q.limit(limit);
  };
  return pageOf(database, { keys: RECORD_KEY, from: rowsFrom }, page, next, RECORD_FIELDS, recordsOf);
}

/** One page of raw rows at once; `next` is the cursor after the page, or null. */
export async function usageRecords(
  database: Database,
  range: { readonly from: string; readonly to: string },
  filter: UsageFilter,
  page: { readonly limit: number; readonly after?: UsageCursor },
): Promise<{ readonly rows: UsageRecord[]; readonly next: UsageCursor | null }> {
  const after = page.after;
  const found = await usageRecordsPage(
    database,
    range,
    filter,
    after === undefined ? { limit: page.limit } : { limit: page.limit, after: [after.at, after.requestId] },
  );
  const rows: UsageRecord[] = [];
  for await (const batch of found.rows()) rows.push(...batch);
  const next = found.next === null ? null : { at: found.next[0] as string, requestId: found.next[1] as string };
  return { rows, next };
}

/** `(c1, c2, …) op (v1, v2, …)`: row values, which both engines compare in order (and SQLite serves from an index). */
function keyCompare(columns: readonly string[], op: '>' | '<=', values: readonly string[]): Expression<SqlBool> {
  return sql<SqlBool>`(${sql.join(columns.map((c) => sql.ref(c)))}) ${sql.raw(op)} (${sql.join(values.map((v) => sql`${v}`))})`;
}

/**
 * The page's last key, when a row follows it. `query` selects the keys of the rows at
 * positions limit and limit + 1 (LIMIT 2 OFFSET limit - 1): two rows mean the page is full
 * and there is more.
 */
async function pageBound(database: Database, query: Compilable, columns: readonly string[]): Promise<readonly string[] | null> {
  const keys: Row[] = [];
  for await (const batch of readRows(database, query)) keys.push(...batch);
  const last = keys[0];
  return keys.length < 2 || last === undefined ? null : columns.map((c) => String(last[c]));
}

/** A query's rows, from the read worker on a SQLite file, else read here. */
async function* readRows(database: Database, query: Compilable): AsyncGenerator<readonly Row[]> {
  const compiled = query.compile();
  if (database.readWorker !== null) {
    yield* database.readWorker.rows(compiled.sql, compiled.parameters);
    return;
  }
  yield (await database.db.executeQuery<Row>(compiled)).rows;
}

/** A page's rows: `from(after, limit)` is the page's query (its upper bound included) from after a sort key, at most `limit` rows. */
interface PageQuery {
  readonly keys: readonly string[];
  from(after: readonly string[] | undefined, limit: number | null): Compilable;
}

function pageOf<T>(
  database: Database,
  query: PageQuery,
  page: UsagePageRequest,
  next: readonly string[] | null,
  columns: readonly TextColumn[],
  map: (batch: readonly Row[]) => T[],
): UsagePage<T> {
  const worker = database.readWorker;
  return {
    next,
    columns,
    async *rows() {
      const batches = worker === null ? inSlices(database, query, page) : readRows(database, query.from(page.after, null));
      for await (const batch of batches) yield map(batch);
    },
    async *text(format) {
      if (worker !== null) {
        const compiled = query.from(page.after, null).compile();
        yield* worker.text(compiled.sql, compiled.parameters, columns, format);
        return;
      }
      for await (const batch of inSlices(database, query, page)) yield renderRows(batch, columns, format);
    },
  };
}

/**
 * A page read on the event loop (Postgres, where the query runs on the server; SQLite in
 * memory) in slices of READ_BATCH_ROWS rows, each its own keyset query, the loop given back
 * between them: the driver parses a slice, never a whole page, at once.
 */
async function* inSlices(database: Database, query: PageQuery, page: UsagePageRequest): AsyncGenerator<readonly Row[]> {
  if (query.keys.length === 0) {
    yield* readRows(database, query.from(undefined, null));
    return;
  }
  let after = page.after;
  // Bounded: a page holds at most page.limit rows, so at most this many full slices and one short one.
  for (let slice = 0; slice <= Math.ceil(page.limit / READ_BATCH_ROWS); slice++) {
    if (slice > 0) await yieldToLoop();
    const { rows } = await database.db.executeQuery<Row>(query.from(after, READ_BATCH_ROWS).compile());
    if (rows.length > 0) yield rows;
    const last = rows[rows.length - 1];
    if (rows.length < READ_BATCH_ROWS || last === undefined) return;
    after = query.keys.map((k) => String(last[k]));
  }
}
