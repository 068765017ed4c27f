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
  /** The strongest action a guardrail took on the request (`warn`, `mask`, `block`); null when none acted. */
  readonly guardrail: string | null;
  /** What the response cache made of the request (`hit`, `miss`, `refresh`, `bypass`, `error`); null when its route has no cache. */
  readonly cache: string | null;
  /** A hit: what its entry cost when it was made (its own cost is 0); 0 for any other row. */
  readonly savedMicroUsd: number;
}

/** The table's row for `r`; `entryId` is the writer's id for it, the same on every retry of its batch. */
export function rawRow(r: LedgerRow, entryId: string): UsageRequestsTable {
  const at = isoAt(r.atMs);
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
    guardrail: r.guardrail,
    cache: r.cache,
    saved_micro_usd: r.savedMicroUsd,
  };
}

/** The row that stands for `count` rows the ledger could not keep; it is not a request, so no rollup counts it. */
export function lossRow(nowMs: number, count: number, entryId: string): UsageRequestsTable {
  return rawRow(lossRecord(nowMs, count), entryId);
}

function lossRecord(nowMs: number, count: number): LedgerRow {
  return {
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
    guardrail: null,
    cache: null,
    savedMicroUsd: 0,
  };
}

/** The `cache` value of a row the response cache answered: what a rollup's cache_hits counts. */
export const CACHE_HIT = 'hit';

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
  'cache',
  'saved_micro_usd',
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
        cache_hits: r.cache === CACHE_HIT ? 1 : 0,
        saved_micro_usd: r.saved_micro_usd,
      });
      continue;
    }
    sum.requests += 1;
    sum.input_tokens += r.input_tokens;
    sum.output_tokens += r.output_tokens;
    sum.cache_read_tokens += r.cache_read_tokens;
    sum.cache_write_tokens += r.cache_write_tokens;
    sum.cost_micro_usd += r.cost_micro_usd;
    if (r.cache === CACHE_HIT) sum.cache_hits += 1;
    sum.saved_micro_usd += r.saved_micro_usd;
  }
  return [...byKey.values()];
}

/** The raw table's columns in the order of a COPY line (copyLines). */
export const RAW_FIELDS = [
  'at',
  'day',
  'request_id',
  'entry_id',
  'team',
  'key_id',
  'endpoint',
  'model',
  'provider',
  'candidate',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cost_micro_usd',
  'status',
  'partial',
  'duration_ms',
  'guardrail',
  'cache',
  'saved_micro_usd',
] as const satisfies ReadonlyArray<keyof UsageRequestsTable>;

/** A batch for Postgres: its COPY text as UTF-8, and the rollups of its requests. */
export interface CopyBatch {
  readonly text: Buffer;
  readonly rollups: UsageDailyTable[];
}

/** The most a line can take as UTF-8 is 3 bytes per UTF-16 unit. */
const MAX_BYTES_PER_UNIT = 3;

/**
 * The writer's buffer for a batch's COPY text, kept from batch to batch (it grows to the
 * largest batch): each line is encoded into it as it is made. One string of the whole batch
 * (hundreds of KiB, flattened and copied once more to be sent) cost twice the CPU, and its
 * garbage the collector's time on the request path. One batch at a time uses it: the next
 * overwrites it only once the previous COPY has ended.
 */
export class CopyText {
  #bytes = Buffer.allocUnsafe(64 * 1024);
  #used = 0;

  reset(): void {
    this.#used = 0;
  }

  append(line: string): void {
    const most = line.length * MAX_BYTES_PER_UNIT;
    if (this.#used + most > this.#bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#bytes.length * 2, this.#used + most));
      this.#bytes.copy(grown, 0, 0, this.#used);
      this.#bytes = grown;
    }
    this.#used += this.#bytes.write(line, this.#used);
  }

  /** The text so far: a view of the buffer, valid until the next reset. */
  view(): Buffer {
    return this.#bytes.subarray(0, this.#used);
  }
}

/**
 * COPY's text format for `rows` (a line per row, RAW_FIELDS in order, tab between) and a
 * loss row, with their rollups, in one pass over the queued rows: no table row is built
 * per request, the time is formatted once per millisecond, and a name is escaped only when
 * it holds a character COPY reserves. Consecutive rows of the same day, team, key, model and
 * provider (the usual run under load) add to one rollup without building its key. The
 * numbers print as String() prints them, and `partial` as 1 or 0, as rawRow gives them.
 */
export function copyLines(
  rows: readonly LedgerRow[],
  entryIdOf: (i: number) => string,
  loss: { readonly atMs: number; readonly count: number; readonly entryId: string } | null,
  text: CopyText,
): CopyBatch {
  const byKey = new Map<string, UsageDailyTable>();
  text.reset();
  let last: LedgerRow | null = null;
  let lastDay = '';
  let sum: UsageDailyTable | null = null;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as LedgerRow;
    const at = isoAt(r.atMs);
    const day = at.slice(0, 10);
    text.append(copyLine(r, at, day, entryIdOf(i)));
    if (r.endpoint === LOSS_ENDPOINT) continue;
    if (
      sum === null ||
      last === null ||
      day !== lastDay ||
      r.team !== last.team ||
      r.keyId !== last.keyId ||
      r.model !== last.model ||
      r.provider !== last.provider
    ) {
      const key = `${day}\u0000${r.team}\u0000${r.keyId}\u0000${r.model}\u0000${r.provider}`;
      sum = byKey.get(key) ?? null;
      if (sum === null) {
        sum = {
          day,
          team: r.team,
          key_id: r.keyId,
          model: r.model,
          provider: r.provider,
          requests: 0,
          input_tokens: 0,
          output_tokens: 0,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          cost_micro_usd: 0,
          cache_hits: 0,
          saved_micro_usd: 0,
        };
        byKey.set(key, sum);
      }
      last = r;
      lastDay = day;
    }
    sum.requests += 1;
    sum.input_tokens += r.inputTokens;
    sum.output_tokens += r.outputTokens;
    sum.cache_read_tokens += r.cacheReadTokens;
    sum.cache_write_tokens += r.cacheWriteTokens;
    sum.cost_micro_usd += r.costMicroUsd;
    if (r.cache === CACHE_HIT) sum.cache_hits += 1;
    sum.saved_micro_usd += r.savedMicroUsd;
  }
  if (loss !== null) {
    const at = isoAt(loss.atMs);
    text.append(copyLine(lossRecord(loss.atMs, loss.count), at, at.slice(0, 10), loss.entryId));
  }
  return { text: text.view(), rollups: [...byKey.values()] };
}

function copyLine(r: LedgerRow, at: string, day: string, entryId: string): string {
  return `${at}\t${day}\t${copyText(r.requestId)}\t${copyText(entryId)}\t${copyText(r.team)}\t${copyText(r.keyId)}\t${copyText(r.endpoint)}\t${copyText(r.model)}\t${copyText(r.provider)}\t${copyText(r.candidate)}\t${r.inputTokens}\t${r.outputTokens}\t${r.cacheReadTokens}\t${r.cacheWriteTokens}\t${r.costMicroUsd}\t${r.status}\t${r.partial ? 1 : 0}\t${r.durationMs}\t${nullableText(r.guardrail)}\t${nullableText(r.cache)}\t${r.savedMicroUsd}\n`;
}

function nullableText(value: string | null): string {
  return value === null ? '\\N' : copyText(value);
}

const COPY_RESERVED = /[\\\t\n\r]/;
const COPY_SPECIAL = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A text field in COPY's text format (a null is `\N`): backslash, tab and line ends escaped. */
function copyText(value: string): string {
  return COPY_RESERVED.test(value) ? value.replace(COPY_SPECIAL, (c) => COPY_ESCAPES[c] as string) : value;
}

let lastAtMs = Number.NaN;
let lastAt = '';

/** RFC 3339 UTC for a time in ms, formatted once per millisecond: rows finished in the same one share it. */
function isoAt(ms: number): string {
  if (ms !== lastAtMs) {
    lastAtMs = ms;
    lastAt = new Date(ms).toISOString();
  }
  return lastAt;
}
