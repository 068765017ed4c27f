import type { Database } from './engine.js';
import type { LedgerRow } from './ledger-rows.js';

// Reading the ledger: totals from the daily rollups (one row per day, team, key, model and
// provider, so a month is a few thousand rows whatever the traffic), and the raw rows page
// by page, in the order they were written, with a cursor.

export type UsageGroup = 'day' | 'team' | 'key' | 'model' | 'provider';
export const USAGE_GROUPS: readonly UsageGroup[] = ['day', 'team', 'key', 'model', 'provider'];

const COLUMN_OF = { day: 'day', team: 'team', key: 'key_id', model: 'model', provider: 'provider' } as const;

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
}

/** Totals of the UTC days `fromDay` (inclusive) to `toDay` (exclusive), grouped by `groupBy` in its order. */
export async function usageTotals(
  database: Database,
  range: { readonly fromDay: string; readonly toDay: string },
  filter: UsageFilter,
  groupBy: readonly UsageGroup[],
): Promise<UsageTotals[]> {
  const columns = groupBy.map((g) => COLUMN_OF[g]);
  let q = database.db
    .selectFrom('usage_daily')
    .where('day', '>=', range.fromDay)
    .where('day', '<', range.toDay)
    .select((eb) => [
      eb.fn.sum<string | number>('requests').as('requests'),
      eb.fn.sum<string | number>('input_tokens').as('input_tokens'),
      eb.fn.sum<string | number>('output_tokens').as('output_tokens'),
      eb.fn.sum<string | number>('cache_read_tokens').as('cache_read_tokens'),
      eb.fn.sum<string | number>('cache_write_tokens').as('cache_write_tokens'),
      eb.fn.sum<string | number>('cost_micro_usd').as('cost_micro_usd'),
    ]);
  if (filter.team !== undefined) q = q.where('team', '=', filter.team);
  if (filter.keyId !== undefined) q = q.where('key_id', '=', filter.keyId);
  if (filter.model !== undefined) q = q.where('model', '=', filter.model);
  for (const c of columns) q = q.select(c).groupBy(c).orderBy(c);
  const rows = (await q.execute()) as Array<Record<string, string | number | null>>;
  return rows
    .filter((r) => r.requests !== null)
    .map((r) => ({
      group: Object.fromEntries(groupBy.map((g) => [g, String(r[COLUMN_OF[g]])])),
      requests: Number(r.requests),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cacheReadTokens: Number(r.cache_read_tokens),
      cacheWriteTokens: Number(r.cache_write_tokens),
      costMicroUsd: Number(r.cost_micro_usd),
    }));
}

/** A raw row as the usage API reads it back: the ledger's row, with its time as written (RFC 3339). */
export type UsageRecord = Omit<LedgerRow, 'atMs'> & { readonly at: string };

/** Where a page of raw rows starts: after this row, in (at, request_id) order. */
export interface UsageCursor {
  readonly at: string;
  readonly requestId: string;
}

/** Raw rows with `from <= at < to` (RFC 3339 UTC, as written), oldest first; `next` is the cursor after the page, or null. */
export async function usageRecords(
  database: Database,
  range: { readonly from: string; readonly to: string },
  filter: UsageFilter,
  page: { readonly limit: number; readonly after?: UsageCursor },
): Promise<{ readonly rows: UsageRecord[]; readonly next: UsageCursor | null }> {
  // The day bounds let Postgres skip the partitions outside the range.
  let q = database.db
    .selectFrom('usage_requests')
    .selectAll()
    .where('day', '>=', range.from.slice(0, 10))
    .where('day', '<=', range.to.slice(0, 10))
    .where('at', '>=', range.from)
    .where('at', '<', range.to);
  if (filter.team !== undefined) q = q.where('team', '=', filter.team);
  if (filter.keyId !== undefined) q = q.where('key_id', '=', filter.keyId);
  if (filter.model !== undefined) q = q.where('model', '=', filter.model);
  const after = page.after;
  if (after !== undefined) {
    q = q.where((eb) => eb.or([eb('at', '>', after.at), eb.and([eb('at', '=', after.at), eb('request_id', '>', after.requestId)])]));
  }
  const found = await q
    .orderBy('at')
    .orderBy('request_id')
    .limit(page.limit + 1)
    .execute();
  const rows = found.slice(0, page.limit).map(
    (r): UsageRecord => ({
      at: r.at,
      requestId: r.request_id,
      team: r.team,
      keyId: r.key_id,
      endpoint: r.endpoint,
      model: r.model,
      provider: r.provider,
      candidate: r.candidate,
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cacheReadTokens: Number(r.cache_read_tokens),
      cacheWriteTokens: Number(r.cache_write_tokens),
      costMicroUsd: Number(r.cost_micro_usd),
      status: Number(r.status),
      partial: Number(r.partial) === 1,
      durationMs: Number(r.duration_ms),
    }),
  );
  const last = rows[rows.length - 1];
  return { rows, next: found.length > page.limit && last !== undefined ? { at: last.at, requestId: last.requestId } : null };
}
