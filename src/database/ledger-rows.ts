import type { UsageDailyTable, UsageRequestsTable } from './tables.js';

// A ledger row as the tables hold it, the row that stands for rows lost, and a batch's
// rollups: what one transaction of the writer inserts.

export interface LedgerRow {
  /** When the request finished, in ms since the epoch: made RFC 3339 by the writer, off the request path. */
  readonly atMs: number;
  readonly requestId: string;
  /** `none` for an anonymous caller (a gateway without keys). */
  readonly team: string;
  readonly keyId: string;
  /** The route's path: `/v1/chat/completions`, `/v1/messages`, `/mcp`, …; `ledger` for a loss row. */
  readonly endpoint: string;
  /** The routed model (for a tools/call, the routed tool), or `none`. */
  readonly model: string;
  readonly provider: string;
  /** The stable_id of the candidate that served the request, or `none`. */
  readonly candidate: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  readonly costMicroUsd: number;
  /** The HTTP status; 499 when the client left first; 0 for a loss row. */
  readonly status: number;
  /** The response was cut after it began (by the upstream, or by the client leaving). */
  readonly partial: boolean;
  readonly durationMs: number;
}

/** The table's row for `r`; `entryId` is the writer's id for it, the same on every retry of its batch. */
export function rawRow(r: LedgerRow, entryId: string): UsageRequestsTable {
  const at = new Date(r.atMs).toISOString();
  return {
    at,
    day: at.slice(0, 10),
    request_id: r.requestId,
    entry_id: entryId,
    team: r.team,
    key_id: r.keyId,
    endpoint: r.endpoint,
    model: r.model,
    provider: r.provider,
    candidate: r.candidate,
    input_tokens: r.inputTokens,
    output_tokens: r.outputTokens,
    cache_read_tokens: r.cacheReadTokens,
    cache_write_tokens: r.cacheWriteTokens,
    cost_micro_usd: r.costMicroUsd,
    status: r.status,
    partial: r.partial ? 1 : 0,
    duration_ms: r.durationMs,
  };
}

/** The row that stands for `count` rows the ledger could not keep; it is not a request, so no rollup counts it. */
export function lossRow(nowMs: number, count: number, entryId: string): UsageRequestsTable {
  return rawRow(
    {
      atMs: nowMs,
      requestId: `${LOSS_PREFIX}${count}`,
      team: 'none',
      keyId: 'none',
      endpoint: LOSS_ENDPOINT,
      model: 'none',
      provider: 'none',
      candidate: 'none',
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costMicroUsd: 0,
      status: 0,
      partial: false,
      durationMs: 0,
    },
    entryId,
  );
}

/** A loss row's endpoint, and its request_id's prefix before the count of rows lost. */
export const LOSS_ENDPOINT = 'ledger';
export const LOSS_PREFIX = 'lost-';

/** What a rollup is made of: the raw fields it groups by and sums, and the endpoint (loss rows are not requests). */
export type RollupSource = Pick<UsageRequestsTable, 'endpoint' | (typeof ROLLUP_SOURCE_FIELDS)[number]>;
export const ROLLUP_SOURCE_FIELDS = [
  'day',
  'team',
  'key_id',
  'model',
  'provider',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cost_micro_usd',
] as const;

export function rollupsOf(raw: readonly RollupSource[]): UsageDailyTable[] {
  const byKey = new Map<string, UsageDailyTable>();
  for (const r of raw) {
    if (r.endpoint === LOSS_ENDPOINT) continue;
    const key = `${r.day}\u0000${r.team}\u0000${r.key_id}\u0000${r.model}\u0000${r.provider}`;
    const sum = byKey.get(key);
    if (sum === undefined) {
      byKey.set(key, {
        day: r.day,
        team: r.team,
        key_id: r.key_id,
        model: r.model,
        provider: r.provider,
        requests: 1,
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        cache_read_tokens: r.cache_read_tokens,
        cache_write_tokens: r.cache_write_tokens,
        cost_micro_usd: r.cost_micro_usd,
      });
      continue;
    }
    sum.requests += 1;
    sum.input_tokens += r.input_tokens;
    sum.output_tokens += r.output_tokens;
    sum.cache_read_tokens += r.cache_read_tokens;
    sum.cache_write_tokens += r.cache_write_tokens;
    sum.cost_micro_usd += r.cost_micro_usd;
  }
  return [...byKey.values()];
}
