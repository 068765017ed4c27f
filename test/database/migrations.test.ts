import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { migrate, openDatabase, SCHEMA_VERSION } from '../../src/database/index.js';
import { postgresDatabase, sqliteDatabase, type TestDatabase } from '../support/databases.js';

const engines = [
  { engine: 'sqlite', open: async (): Promise<TestDatabase | { skip: string }> => sqliteDatabase() },
  { engine: 'postgres', open: postgresDatabase },
] as const;

for (const { engine, open } of engines) {
  test(`${engine}: migrations bring an empty database to the newest schema once, and a second start applies nothing`, async (t) => {
    const target = await open();
    if ('skip' in target) return t.skip(target.skip);
    const database = openDatabase({ url: target.url });
    try {
      const first = await migrate(database.db, database.engine);
      assert.equal(first.ok, true);
      assert.ok(first.ok && first.from === 0 && first.to === SCHEMA_VERSION && first.applied.length === SCHEMA_VERSION);
      const second = await migrate(database.db, database.engine);
      assert.deepEqual(second, { ok: true, from: SCHEMA_VERSION, to: SCHEMA_VERSION, applied: [] });
      const state = await database.db.selectFrom('managed_state').selectAll().execute();
      assert.deepEqual(
        state.map((r) => [Number(r.id), Number(r.version)]),
        [[1, 0]],
      );
    } finally {
      await database.close();
      await target.drop();
    }
  });

  test(`${engine}: a database whose schema is newer than the gateway knows is refused, and left as it was`, async (t) => {
    const target = await open();
    if ('skip' in target) return t.skip(target.skip);
    const database = openDatabase({ url: target.url });
    try {
      assert.equal((await migrate(database.db, database.engine)).ok, true);
      await database.db
        .insertInto('schema_version')
        .values({ version: SCHEMA_VERSION + 1, name: 'from a newer gateway', applied_at: new Date().toISOString() })
        .execute();
      const refused = await migrate(database.db, database.engine);
      assert.equal(refused.ok, false);
      assert.match(
        refused.ok ? '' : refused.message,
        new RegExp(`version ${SCHEMA_VERSION + 1}, newer than this gateway knows \\(${SCHEMA_VERSION}\\)`),
      );
      const rows = await sql<{ n: number }>`select count(*) as n from schema_version`.execute(database.db);
      assert.equal(Number(rows.rows[0]?.n), SCHEMA_VERSION + 1);
    } finally {
      await database.close();
      await target.drop();
    }
  });
}

for (const { engine, open } of engines) {
  test(`${engine}: a ledger that holds a batch twice (written before rows had entry ids) still migrates, and keeps those rows`, async (t) => {
    const target = await open();
    if ('skip' in target) return t.skip(target.skip);
    const database = openDatabase({ url: target.url });
    try {
      assert.equal((await migrate(database.db, database.engine)).ok, true);
      // Back to schema version 1, as a database written before version 2 is.
      for (const table of ['conversation_items', 'conversations', 'response_items', 'responses'])
        await sql`drop table ${sql.table(table)}`.execute(database.db);
      await sql`alter table usage_requests drop column guardrail`.execute(database.db);
      await sql`drop index usage_requests_day_entry`.execute(database.db);
      await sql`alter table usage_requests drop column entry_id`.execute(database.db);
      await sql`delete from schema_version where version >= 2`.execute(database.db);
      const row = sql`('2026-12-01T10:00:00.000Z', '2026-12-01', 'req-1', 'platform', 'ci', '/v1/chat/completions', 'm', 'east', 'east-1', 10, 2, 0, 0, 100, 200, 0, 1.5)`;
      for (let i = 0; i < 2; i++) {
        await sql`insert into usage_requests (at, day, request_id, team, key_id, endpoint, model, provider, candidate, input_tokens,
          output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, status, partial, duration_ms) values ${row}`.execute(
          database.db,
        );
      }
      const migrated = await migrate(database.db, database.engine);
      assert.equal(migrated.ok, true);
      assert.ok(migrated.ok && migrated.from === 1 && migrated.to === SCHEMA_VERSION);
      const rows = await sql<{ n: number }>`select count(*) as n from usage_requests where request_id = 'req-1'`.execute(database.db);
      assert.equal(Number(rows.rows[0]?.n), 2);
    } finally {
      await database.close();
      await target.drop();
    }
  });
}
