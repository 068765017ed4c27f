import { sql } from 'kysely';
import type { Database } from './engine.js';

// What keeps the raw ledger bounded. Postgres holds raw rows in one partition per UTC day,
// made ahead (today and tomorrow) so that rows rarely land in the default partition: a day
// partition cannot be created once the default holds rows of that day, which is why they
// are only ever made ahead. Pruning drops whole day partitions there; SQLite, and the
// Postgres default partition, delete in small batches with a pause between, so neither a
// long lock nor one huge transaction competes with the ledger's writes. The daily rollups
// are never pruned.

/** Rows per DELETE, and the pause between two. */
const PRUNE_BATCH_ROWS = 5000;
const PRUNE_PAUSE_MS = 20;
const PARTITION = /^usage_requests_(\d{4})(\d{2})(\d{2})$/;

/** The UTC day (YYYY-MM-DD) of a time in ms since the epoch. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function nextDay(day: string): string {
  return utcDay(Date.parse(`${day}T00:00:00Z`) + 86_400_000);
}

/** The name of a day's partition: `usage_requests_YYYYMMDD`. */
export function partitionName(day: string): string {
  return `usage_requests_${day.replaceAll('-', '')}`;
}

/**
 * Postgres: a partition for each of `days` that has none yet. Returns a problem per day it
 * could not make (the default partition already holds rows of that day, say): those rows
 * stay in the default partition, which serves and is pruned as well.
 */
export async function preparePartitions(database: Database, days: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  const existing = new Set(await dayPartitions(database));
  for (const day of days) {
    const name = partitionName(day);
    if (existing.has(name)) continue;
    try {
      // The name and bounds are made here from a checked day, never from input.
      await sql
        .raw(`create table if not exists ${name} partition of usage_requests for values from ('${day}') to ('${nextDay(day)}')`)
        .execute(database.db);
    } catch (err) {
      // Another replica made it first, or the default partition holds rows of that day.
      if (!(await dayPartitions(database)).includes(name)) {
        problems.push(
          `usage ledger partition ${name} not created (rows of ${day} stay in the default partition): ${(err as Error).message}`,
        );
      }
    }
  }
  return problems;
}

/** Postgres: the day partitions of usage_requests, by name. */
export async function dayPartitions(database: Database): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i
    join pg_class c on c.oid = i.inhrelid
    join pg_class p on p.oid = i.inhparent
    where p.relname = 'usage_requests'`.execute(database.db);
  return rows.map((r) => r.name).filter((n) => PARTITION.test(n));
}

export interface PruneResult {
  /** Raw rows deleted one batch at a time (SQLite, or the Postgres default partition). */
  readonly deletedRows: number;
  /** Postgres day partitions dropped whole. */
  readonly droppedPartitions: readonly string[];
}

/** Removes raw rows of days before `keepFromDay`; the rollups stay. */
export async function pruneUsage(database: Database, keepFromDay: string): Promise<PruneResult> {
  const droppedPartitions: string[] = [];
  let deletedRows = 0;
  if (database.engine === 'postgres') {
    for (const name of await dayPartitions(database)) {
      const m = PARTITION.exec(name) as RegExpExecArray;
      if (`${m[1]}-${m[2]}-${m[3]}` >= keepFromDay) continue;
      await sql.raw(`drop table if exists ${name}`).execute(database.db);
      droppedPartitions.push(name);
    }
    for (;;) {
      const r = await sql`delete from usage_requests_default where ctid in (
        select ctid from usage_requests_default where day < ${keepFromDay} limit ${PRUNE_BATCH_ROWS})`.execute(database.db);
      const n = Number(r.numAffectedRows ?? 0);
      deletedRows += n;
      if (n < PRUNE_BATCH_ROWS) break;
      await new Promise((res) => setTimeout(res, PRUNE_PAUSE_MS));
    }
    return { deletedRows, droppedPartitions };
  }
  for (;;) {
    const r = await sql`delete from usage_requests where rowid in (
      select rowid from usage_requests where day < ${keepFromDay} limit ${PRUNE_BATCH_ROWS})`.execute(database.db);
    const n = Number(r.numAffectedRows ?? 0);
    deletedRows += n;
    if (n < PRUNE_BATCH_ROWS) break;
    await new Promise((res) => setTimeout(res, PRUNE_PAUSE_MS));
  }
  return { deletedRows, droppedPartitions };
}
