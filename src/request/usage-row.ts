/**
 * One finished request as the usage ledger keeps it. The ledger's writer is the database's
 * (database/ledger.ts), which request/ may not import: this is the shape both agree on, and
 * the composition root hands the writer in as a UsageLedger.
 */
export interface UsageRow {
  /** When the request finished, in ms since the epoch (the writer makes it RFC 3339, off the request path). */
  readonly atMs: number;
  readonly requestId: string;
  /** `none` for an anonymous caller (a gateway without keys). */
  readonly team: string;
  readonly keyId: string;
  /** The path of the route that served it (`/v1/chat/completions`, `/v1/messages`, `/mcp`, …). */
  readonly endpoint: string;
  /** The routed model (a tools/call: the routed tool), or `none`. */
  readonly model: string;
  readonly provider: string;
  /** The stable_id of the candidate that answered, or `none`. */
  readonly candidate: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  readonly costMicroUsd: number;
  /** The HTTP status sent; 499 when the client left first. */
  readonly status: number;
  /** The response was cut after it began, by the upstream or by the client leaving. */
  readonly partial: boolean;
  readonly durationMs: number;
}

/** Where the record puts each row: synchronous and O(1), it never waits on the database. */
export interface UsageLedger {
  record(row: UsageRow): void;
}
