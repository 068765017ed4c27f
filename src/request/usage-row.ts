import type { LedgerRow } from '../database/index.js';
import type { RequestRecord } from './request-record.js';

/**
 * One finished request as the usage ledger keeps it: the database's own row type (types
 * only: the writer is handed in by the composition root as a UsageLedger).
 */
export type UsageRow = LedgerRow;

/** Where the record puts each row: synchronous and O(1), it never waits on the database. */
export interface UsageLedger {
  record(row: UsageRow): void;
}

/**
 * The row of a call that uses no tokens (a tools/call, a call on an agent): who, where and how
 * it ended, at no cost; `what` names the endpoint, the exposed name and what answered.
 */
export function untokenedRow(
  r: RequestRecord,
  what: Pick<UsageRow, 'endpoint' | 'model' | 'provider' | 'candidate' | 'guardrail'>,
): UsageRow | null {
  const principal = r.principal;
  if (principal === null) return null;
  const status = r.status;
  return {
    atMs: r.endedAtMs,
    requestId: r.requestId,
    team: principal.team ?? 'none',
    keyId: principal.keyId ?? 'none',
    ...what,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costMicroUsd: 0,
    status: status === 'partial' ? r.statusCode : status,
    partial: status === 'partial',
    durationMs: r.durationMs,
    cache: null,
    savedMicroUsd: 0,
  };
}
