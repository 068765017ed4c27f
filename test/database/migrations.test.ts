import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { Ledger, migrate, openDatabase, SCHEMA_VERSION, usageRecords, usageTotals } from '../../src/database/index.js';
import { postgresDatabase, sqliteDatabase, type TestDatabase } from '../support/databases.js';

const engines = [
  { engine: 'sqlite', open: async (): Promise<TestDatabase | { skip: string }> => sqliteDatabase() },
  { engine: 'postgres', open: postgresDatabase },
] as const;

const ALL_TIME = { from: '2000-01-01T00:00:00.000Z', to: '2100-01-01T00:00:00.000Z' };

/** The tables schema version 6 adds: dropped to take a database back before it. */
const TABLES_OF_6 = ['topology', 'topology_state', 'replicas'];

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
      for (const table of ['conversation_items', 'conversations', 'response_items', 'responses', ...TABLES_OF_6])
        await sql`drop table ${sql.table(table)}`.execute(database.db);
      for (const [table, column] of [
        ['usage_requests', 'guardrail'],
        ['usage_requests', 'cache'],
        ['usage_requests', 'saved_micro_usd'],
        ['usage_daily', 'cache_hits'],
        ['usage_daily', 'saved_micro_usd'],
      ] as const)
        await sql`alter table ${sql.table(table)} drop column ${sql.ref(column)}`.execute(database.db);
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

for (const { engine, open } of engines) {
  test(`${engine}: a ledger written before the cache columns migrates; its rows say no cache and nothing saved, and its rollups count hits from then on`, async (t) => {
    const target = await open();
    if ('skip' in target) return t.skip(target.skip);
    const database = openDatabase({ url: target.url });
    try {
      assert.equal((await migrate(database.db, database.engine)).ok, true);
      // Back to schema version 4, with a row and its rollup written then.
      for (const table of TABLES_OF_6) await sql`drop table ${sql.table(table)}`.execute(database.db);
      for (const [table, column] of [
        ['usage_requests', 'cache'],
        ['usage_requests', 'saved_micro_usd'],
        ['usage_daily', 'cache_hits'],
        ['usage_daily', 'saved_micro_usd'],
      ] as const)
        await sql`alter table ${sql.table(table)} drop column ${sql.ref(column)}`.execute(database.db);
      await sql`delete from schema_version where version >= 5`.execute(database.db);
      await sql`insert into usage_requests (at, day, request_id, entry_id, team, key_id, endpoint, model, provider, candidate, input_tokens,
        output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, status, partial, duration_ms, guardrail)
        values ('2026-12-01T10:00:00.000Z', '2026-12-01', 'req-old', 'w-0', 'platform', 'ci', '/v1/chat/completions', 'm', 'east',
        'east-1', 10, 2, 0, 0, 100, 200, 0, 1.5, null)`.execute(database.db);
      await sql`insert into usage_daily (day, team, key_id, model, provider, requests, input_tokens, output_tokens, cache_read_tokens,
        cache_write_tokens, cost_micro_usd) values ('2026-12-01', 'platform', 'ci', 'm', 'east', 1, 10, 2, 0, 0, 100)`.execute(database.db);

      const migrated = await migrate(database.db, database.engine);
      assert.ok(migrated.ok && migrated.from === 4 && migrated.applied.length === SCHEMA_VERSION - 4, JSON.stringify(migrated));
      const before = await usageRecords(database, ALL_TIME, {}, { limit: 10 });
      assert.deepEqual(
        before.rows.map((r) => [r.requestId, r.cache, r.savedMicroUsd]),
        [['req-old', null, 0]],
      );

      const ledger = new Ledger(database, { queueRows: 10, retentionDays: 36_500 });
      ledger.record({
        atMs: Date.parse('2026-12-01T11:00:00.000Z'),
        requestId: 'req-hit',
        team: 'platform',
        keyId: 'ci',
        endpoint: '/v1/chat/completions',
        model: 'm',
        provider: 'east',
        candidate: 'east-1',
        inputTokens: 0,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costMicroUsd: 0,
        status: 200,
        partial: false,
        durationMs: 0.5,
        guardrail: null,
        cache: 'hit',
        savedMicroUsd: 100,
      });
      await ledger.close();
      const [total] = await usageTotals(database, { fromDay: '2026-12-01', toDay: '2026-12-02' }, {}, ['model']);
      assert.deepEqual(
        [total?.requests, total?.costMicroUsd, total?.cacheHits, total?.savedMicroUsd],
        [2, 100, 1, 100],
        'one rollup row: the old request and the hit',
      );
    } finally {
      await database.close();
      await target.drop();
    }
  });
}
