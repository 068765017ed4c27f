import { type Kysely, sql } from 'kysely';
import type { Engine } from './engine.js';
import type { Tables } from './tables.js';

// Numbered schema changes, applied at start-up in one transaction (both engines run DDL in
// a transaction) and recorded in schema_version. A database whose schema is newer than
// this gateway knows is refused: an older binary must not write to tables it does not know.

interface Migration {
  readonly version: number;
  readonly name: string;
  up(db: Kysely<Tables>, engine: Engine): Promise<void>;
}

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'managed teams and keys, usage ledger',
    async up(db, engine) {
      await db.schema
        .createTable('managed_state')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('version', 'integer', (c) => c.notNull())
        .execute();
      await db.insertInto('managed_state').values({ id: 1, version: 0 }).execute();
      await db.schema
        .createTable('teams')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('spec', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        // No foreign key: a managed key may belong to a team of the config file.
        .addColumn('team', 'text', (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull().unique())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('previous_sha256', 'text')
        .addColumn('previous_until', 'text')
        .addColumn('spec', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('revoked_at', 'text')
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .execute();
      await db.schema.createIndex('keys_team').on('keys').column('team').execute();

      const usageColumns = (t: ReturnType<Kysely<Tables>['schema']['createTable']>) =>
        t
          .addColumn('at', 'text', (c) => c.notNull())
          .addColumn('day', 'text', (c) => c.notNull())
          .addColumn('request_id', 'text', (c) => c.notNull())
          .addColumn('team', 'text', (c) => c.notNull())
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('endpoint', 'text', (c) => c.notNull())
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('provider', 'text', (c) => c.notNull())
          .addColumn('candidate', 'text', (c) => c.notNull())
          .addColumn('input_tokens', 'bigint', (c) => c.notNull())
          .addColumn('output_tokens', 'bigint', (c) => c.notNull())
          .addColumn('cache_read_tokens', 'bigint', (c) => c.notNull())
          .addColumn('cache_write_tokens', 'bigint', (c) => c.notNull())
          .addColumn('cost_micro_usd', 'bigint', (c) => c.notNull())
          .addColumn('status', 'integer', (c) => c.notNull())
          .addColumn('partial', 'integer', (c) => c.notNull())
          .addColumn('duration_ms', 'real', (c) => c.notNull());
      if (engine === 'postgres') {
        // Raw rows by day: pruning a day is dropping its partition. Partitions are made
        // ahead by the ledger; the default one takes a row whose day has none yet.
        await usageColumns(db.schema.createTable('usage_requests')).modifyEnd(sql`partition by range (day)`).execute();
        await sql`create table usage_requests_default partition of usage_requests default`.execute(db);
      } else {
        await usageColumns(db.schema.createTable('usage_requests')).execute();
      }
      await db.schema.createIndex('usage_requests_day_at').on('usage_requests').columns(['day', 'at']).execute();
      await db.schema
        .createTable('usage_daily')
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('team', 'text', (c) => c.notNull())
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('requests', 'bigint', (c) => c.notNull())
        .addColumn('input_tokens', 'bigint', (c) => c.notNull())
        .addColumn('output_tokens', 'bigint', (c) => c.notNull())
        .addColumn('cache_read_tokens', 'bigint', (c) => c.notNull())
        .addColumn('cache_write_tokens', 'bigint', (c) => c.notNull())
        .addColumn('cost_micro_usd', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('usage_daily_pk', ['day', 'team', 'key_id', 'model', 'provider'])
        .execute();
    },
  },
  {
    version: 2,
    name: 'usage ledger rows unique per writer entry',
    async up(db) {
      // Rows already written keep a null entry_id, which never conflicts: a database that
      // holds a batch twice (the duplicates this prevents) still migrates. Those copies
      // cannot be told apart from two requests that sent the same x-request-id, so they
      // stay. The index includes day, the partition key, as a unique index on a
      // partitioned table must; each day partition gets its own.
      await db.schema.alterTable('usage_requests').addColumn('entry_id', 'text').execute();
      await db.schema.createIndex('usage_requests_day_entry').unique().on('usage_requests').columns(['day', 'entry_id']).execute();
    },
  },
  {
    version: 3,
    name: 'stored responses and conversations',
    async up(db) {
      await db.schema
        .createTable('responses')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('team', 'text')
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('conversation', 'text')
        .addColumn('ancestors', 'text', (c) => c.notNull())
        .addColumn('input', 'text', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('origin', 'text')
        .execute();
      // Retention deletes by age, oldest first.
      await db.schema.createIndex('responses_created_at').on('responses').column('created_at').execute();
      await db.schema
        .createTable('response_items')
        .addColumn('item_id', 'text', (c) => c.primaryKey())
        .addColumn('response_id', 'text', (c) => c.notNull())
        .addColumn('team', 'text')
        .execute();
      await db.schema.createIndex('response_items_response').on('response_items').column('response_id').execute();
      await db.schema
        .createTable('conversations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('team', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('conversations_created_at').on('conversations').column('created_at').execute();
      await db.schema
        .createTable('conversation_items')
        .addColumn('conv_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'bigint', (c) => c.notNull())
        .addColumn('item_id', 'text', (c) => c.notNull())
        .addColumn('item', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('conversation_items_pk', ['conv_id', 'seq'])
        .addUniqueConstraint('conversation_items_conv_item', ['conv_id', 'item_id'])
        .execute();
    },
  },
  {
    version: 4,
    name: 'usage ledger guardrail column',
    async up(db) {
      // Nullable, so adding it rewrites no row; on Postgres the partitions take it from their parent.
      await db.schema.alterTable('usage_requests').addColumn('guardrail', 'text').execute();
    },
  },
  {
    version: 5,
    name: 'usage ledger cache columns',
    async up(db) {
      // A constant default is written into the catalog, not into each row, on both engines
      // (Postgres 11 and later): adding these rewrites no row either. Rows and rollups written
      // before carry 0, which is what they saved: there was no cache.
      await db.schema.alterTable('usage_requests').addColumn('cache', 'text').execute();
      await db.schema
        .alterTable('usage_requests')
        .addColumn('saved_micro_usd', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('usage_daily')
        .addColumn('cache_hits', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('usage_daily')
        .addColumn('saved_micro_usd', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  {
    version: 6,
    name: 'topology written through the admin API, replica heartbeats',
    async up(db) {
      // Providers, model routes, tool routes and prices, each as the config file writes it (JSON),
      // under its kind and name. A secret is a reference here as in the file: never a value.
      await db.schema
        .createTable('topology')
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('spec', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('topology_pk', ['kind', 'id'])
        .execute();
      // One row: the topology's own version (bumped with the shared one by every topology
      // write), and the seed's durable marker: once set, the file's topology is never imported again.
      await db.schema
        .createTable('topology_state')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('seeded_at', 'text')
        .addColumn('seeded_from', 'text')
        .execute();
      await db.insertInto('topology_state').values({ id: 1, version: 0, seeded_at: null, seeded_from: null }).execute();
      // Each replica's last word on what it serves, written every database.recheck_ms / 2.
      await db.schema
        .createTable('replicas')
        .addColumn('instance', 'text', (c) => c.primaryKey())
        .addColumn('generation', 'integer', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('built_at', 'text', (c) => c.notNull())
        .addColumn('heartbeat_at', 'text', (c) => c.notNull())
        .addColumn('digest_since', 'text', (c) => c.notNull())
        .addColumn('last_reload_error', 'text')
        .execute();
    },
  },
];

/** The newest schema this gateway knows. */
export const SCHEMA_VERSION = MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);

export type MigrationResult =
  | { readonly ok: true; readonly from: number; readonly to: number; readonly applied: readonly string[] }
  | { readonly ok: false; readonly message: string };

/** Brings the schema to SCHEMA_VERSION, or refuses a newer one; all or nothing. */
export async function migrate(
  db: Kysely<Tables>,
  engine: Engine,
  now: () => string = () => new Date().toISOString(),
): Promise<MigrationResult> {
  return db.transaction().execute(async (tx) => {
    // Two replicas starting together: the second waits here for the first's migrations.
    if (engine === 'postgres') await sql`select pg_advisory_xact_lock(7234001)`.execute(tx);
    await tx.schema
      .createTable('schema_version')
      .ifNotExists()
      .addColumn('version', 'integer', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('applied_at', 'text', (c) => c.notNull())
      .execute();
    const row = await tx
      .selectFrom('schema_version')
      .select((eb) => eb.fn.max('version').as('v'))
      .executeTakeFirst();
    const from = Number(row?.v ?? 0);
    if (from > SCHEMA_VERSION) {
      return {
        ok: false,
        message: `the database's schema is version ${from}, newer than this gateway knows (${SCHEMA_VERSION}): upgrade the gateway, or point it at another database`,
      } as const;
    }
    const applied: string[] = [];
    for (const m of MIGRATIONS) {
      if (m.version <= from) continue;
      await m.up(tx, engine);
      await tx.insertInto('schema_version').values({ version: m.version, name: m.name, applied_at: now() }).execute();
      applied.push(`${m.version} ${m.name}`);
    }
    return { ok: true, from, to: SCHEMA_VERSION, applied } as const;
  });
}
