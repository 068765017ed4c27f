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
