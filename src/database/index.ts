/**
 * The database behind managed teams and keys and the usage ledger: one query layer
 * (Kysely) over SQLite (one replica) and Postgres (replicas), numbered migrations applied at
 * start-up, the teams and keys the admin API writes, and how a replica hears of another's
 * writes. Never on the request path: a generation is built from a snapshot, and the ledger
 * is written in batches.
 *
 * Each replica's heartbeat (replicas.ts) is kept here too, or in Redis without a database.
 *
 * Boundary: imports no other folder; it stores teams and keys as the config file writes
 * them (JSON), and the callers validate them with the config's own schema.
 */

export { ChangeWatch, type ChangeWatchOptions } from './changes.js';
export { type Database, type DatabaseSettings, type Engine, engineOf, openDatabase, sqlitePath } from './engine.js';
export { BATCH_ROWS, Ledger, type LedgerOptions } from './ledger.js';
export { type LedgerRow, LOSS_ENDPOINT, LOSS_PREFIX } from './ledger-rows.js';
export { dayPartitions, type PruneResult, partitionName, preparePartitions, pruneUsage, utcDay } from './ledger-upkeep.js';
export {
  CHANGES_CHANNEL,
  CommitUnknownError,
  ConstraintError,
  type ManagedKey,
  ManagedRecords,
  type ManagedSnapshot,
  type ManagedTeam,
  ManagedWrites,
  type NewKey,
  type NewTeam,
  type Page,
  type WriteResult,
} from './managed.js';
export { type MigrationResult, migrate, SCHEMA_VERSION } from './migrations.js';
export { DatabaseReplicaRecords, RedisReplicaRecords, type ReplicaRecord, type ReplicaRecords } from './replicas.js';
export type {
  ConversationItemsTable,
  ConversationsTable,
  ReplicasTable,
  ResponseItemsTable,
  ResponsesTable,
  Tables,
  TopologyStateTable,
  TopologyTable,
  UsageDailyTable,
  UsageRequestsTable,
} from './tables.js';
export {
  EMPTY_TOPOLOGY,
  TOPOLOGY_KINDS,
  type TopologyKind,
  TopologyMovedError,
  type TopologyObject,
  TopologyRecords,
  type TopologySnapshot,
  type TopologyState,
  TopologyWrites,
} from './topology.js';
export {
  USAGE_GROUPS,
  type UsageCursor,
  type UsageFilter,
  type UsageGroup,
  type UsagePage,
  type UsagePageRequest,
  type UsageRecord,
  type UsageTotals,
  usageRecords,
  usageRecordsPage,
  usageTotals,
  usageTotalsPage,
} from './usage-query.js';
export { csvField, csvHeader, renderRows, type TextColumn, type TextFormat } from './usage-text.js';
