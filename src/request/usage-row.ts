import type { LedgerRow } from '../database/index.js';

/**
 * One finished request as the usage ledger keeps it: the database's own row type (types
 * only: the writer is handed in by the composition root as a UsageLedger).
 */
export type UsageRow = LedgerRow;

/** Where the record puts each row: synchronous and O(1), it never waits on the database. */
export interface UsageLedger {
  record(row: UsageRow): void;
}
