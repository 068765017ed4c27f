import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  type Database,
  dayPartitions,
  Ledger,
  type LedgerRow,
  migrate,
  openDatabase,
  partitionName,
  usageRecords,
  usageTotals,
} from '../../src/database/index.js';
import { POSTGRES_ADMIN_URL, postgresDatabase, sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { PgFaultProxy } from '../support/pg-fault-proxy.js';

// The usage ledger's writer against a real SQLite file and the machine's PostgreSQL: the
// rollups equal the raw rows they came from, a full queue drops and counts rows and one row
// summarizes them, a database that refuses connections keeps its batch and loses nothing,
// and retention removes old raw rows (a whole day partition on Postgres) but keeps the rollups.

const DAY_MS = 86_400_000;
const EVERYTHING = { fromDay: '2000-01-01', toDay: '2100-01-01' };
const ALL_TIME = { from: '2000-01-01T00:00:00.000Z', to: '2100-01-01T00:00:00.000Z' };

function row(i: number, atMs: number, extra: Partial<LedgerRow> = {}): LedgerRow {
  return {
    atMs,
    requestId: `req-${String(i).padStart(6, '0')}`,
    team: `team-${i % 3}`,
    keyId: `key-${i % 5}`,
    endpoint: '/v1/chat/completions',
    model: i % 2 === 0 ? 'gpt-even' : 'gpt-odd',
    provider: 'east',
    candidate: 'east-1',
    inputTokens: 10 + (i % 7),
    outputTokens: 3 + (i % 4),
    cacheReadTokens: i % 2,
    cacheWriteTokens: 0,
    costMicroUsd: 100 + i,
    status: 200,
    partial: false,
    durationMs: 1.25,
    guardrail: null,
    cache: null,
    savedMicroUsd: 0,
    ...extra,
  };
}

async function allRecords(database: Database) {
  const rows = [];
  let after: { at: string; requestId: string } | undefined;
  for (;;) {
    const page = await usageRecords(database, ALL_TIME, {}, after === undefined ? { limit: 1000 } : { limit: 1000, after });
    rows.push(...page.rows);
    if (page.next === null) return rows;
    after = page.next;
  }
}

for (const engine of ['sqlite', 'postgres'] as const) {
  describe(`the usage ledger on ${engine}`, () => {
    let test: TestDatabase | null = null;
    let skip: string | false = false;
    const opened: Database[] = [];

    before(async () => {
      const made = engine === 'sqlite' ? sqliteDatabase() : await postgresDatabase();
      if ('skip' in made) skip = made.skip;
      else test = made;
    });
    after(async () => {
      for (const d of opened) await d.close().catch(() => undefined);
      await test?.drop();
    });

    async function fresh(): Promise<Database> {
      const database = openDatabase({ url: (test as TestDatabase).url });
      opened.push(database);
      const m = await migrate(database.db, database.engine);
      assert.equal(m.ok, true);
      await database.db.deleteFrom('usage_requests').execute();
      await database.db.deleteFrom('usage_daily').execute();
      return database;
    }

    it('writes every row once and adds each batch to the daily rollups, across batches', async (t) => {
      if (skip) return t.skip(skip);
      const database = await fresh();
      const ledger = new Ledger(database, { queueRows: 100_000, retentionDays: 30 });
      await ledger.start();
      const now = Date.now();
      const rows = Array.from({ length: 5000 }, (_, i) => row(i, now - (i % 2) * DAY_MS));
      for (const r of rows.slice(0, 4500)) ledger.record(r);
      await ledger.flush();
      for (const r of rows.slice(4500)) ledger.record(r);
      await ledger.close();
      assert.equal(ledger.lost, 0);
      assert.equal(ledger.depth, 0);

      const written = await allRecords(database);
      assert.equal(written.length, rows.length);
      assert.deepEqual(new Set(written.map((w) => w.requestId)).size, rows.length, 'no row twice');
      const byTeam = await usageTotals(database, EVERYTHING, {}, ['team']);
      for (const total of byTeam) {
        const mine = rows.filter((r) => r.team === total.group.team);
        assert.equal(total.requests, mine.length);
        assert.equal(
          total.inputTokens,
          mine.reduce((s, r) => s + r.inputTokens, 0),
        );
        assert.equal(
          total.costMicroUsd,
          mine.reduce((s, r) => s + r.costMicroUsd, 0),
        );
        assert.equal(
          total.cacheReadTokens,
          mine.reduce((s, r) => s + r.cacheReadTokens, 0),
        );
      }
      const byDay = await usageTotals(database, EVERYTHING, { team: 'team-1' }, ['day', 'model']);
      assert.equal(
        byDay.reduce((s, t) => s + t.requests, 0),
        rows.filter((r) => r.team === 'team-1').length,
      );
      assert.ok(byDay.every((t) => t.group.day !== undefined && t.group.model !== undefined));
    });

    it('keeps the strongest guardrail action of a row, null where none acted, and counts a judge model’s row (endpoint guardrail) as a request', async (t) => {
      if (skip) return t.skip(skip);
      const database = await fresh();
      const ledger = new Ledger(database, { queueRows: 100, retentionDays: 30 });
      await ledger.start();
      const atMs = Date.parse('2026-12-01T10:00:00.000Z');
      ledger.record(row(1, atMs));
      ledger.record(row(2, atMs + 1, { guardrail: 'mask' }));
      ledger.record(row(3, atMs + 2, { endpoint: 'guardrail', model: 'judge', costMicroUsd: 40 }));
      await ledger.close();
      const got = await allRecords(database);
      assert.deepEqual(
        got.map((r) => [r.requestId, r.endpoint, r.guardrail]),
        [
          ['req-000001', '/v1/chat/completions', null],
          ['req-000002', '/v1/chat/completions', 'mask'],
          ['req-000003', 'guardrail', null],
        ],
      );
      const [judge] = await usageTotals(database, EVERYTHING, { model: 'judge' }, ['model']);
      assert.deepEqual([judge?.requests, judge?.costMicroUsd], [1, 40]);
    });

    it('keeps what the response cache made of each row, and adds its hits and what they saved to the daily rollups', async (t) => {
      if (skip) return t.skip(skip);
      const database = await fresh();
      const ledger = new Ledger(database, { queueRows: 100, retentionDays: 30 });
      await ledger.start();
      const atMs = Date.parse('2026-12-01T10:00:00.000Z');
      const cached = { team: 'platform', keyId: 'ci', model: 'm', provider: 'east' };
      ledger.record(row(1, atMs, { ...cached, cache: 'miss', costMicroUsd: 900 }));
      const hit = { ...cached, cache: 'hit', inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, costMicroUsd: 0, savedMicroUsd: 900 };
      ledger.record(row(2, atMs + 1, hit));
      ledger.record(row(3, atMs + 2, hit));
      ledger.record(row(4, atMs + 3, { ...cached, cache: 'hit', costMicroUsd: 0, savedMicroUsd: 0 }));
      ledger.record(row(5, atMs + 4, { ...cached }));
      ledger.record(row(6, atMs + 5, { ...cached, endpoint: 'cache', model: 'embed', cache: null, costMicroUsd: 3 }));
      await ledger.close();
      const got = await allRecords(database);
      assert.deepEqual(
        got.map((r) => [r.requestId, r.endpoint, r.cache, r.costMicroUsd, r.savedMicroUsd]),
        [
          ['req-000001', '/v1/chat/completions', 'miss', 900, 0],
          ['req-000002', '/v1/chat/completions', 'hit', 0, 900],
          ['req-000003', '/v1/chat/completions', 'hit', 0, 900],
          ['req-000004', '/v1/chat/completions', 'hit', 0, 0],
          ['req-000005', '/v1/chat/completions', null, 105, 0],
          ['req-000006', 'cache', null, 3, 0],
        ],
      );
      const [m] = await usageTotals(database, EVERYTHING, { model: 'm' }, ['model']);
      assert.deepEqual([m?.requests, m?.cacheHits, m?.savedMicroUsd, m?.costMicroUsd, m?.inputTokens], [5, 3, 1800, 1005, 11 + 14 + 15]);
      const [embed] = await usageTotals(database, EVERYTHING, { model: 'embed' }, ['model']);
      assert.deepEqual([embed?.requests, embed?.cacheHits, embed?.savedMicroUsd], [1, 0, 0]);
    });

    it('keeps every field of a row exactly, names with a tab, a line end, a backslash or a quote included', async (t) => {
      if (skip) return t.skip(skip);
      const database = await fresh();
      const ledger = new Ledger(database, { queueRows: 100, retentionDays: 30 });
      await ledger.start();
      const atMs = Date.parse('2026-11-30T23:59:59.123Z');
      const odd = row(1, atMs, {
        requestId: 'req\twith\ttabs',
        team: 'team\\back\\slash',
        keyId: 'key\nline\r\nends',
        model: 'model "quoted" \'and\' \\N',
        provider: 'prov,ider',
        candidate: 'cand\u00e9-\u{1f600}',
        inputTokens: 12_345_678_901,
        outputTokens: 0,
        cacheReadTokens: 7,
        cacheWriteTokens: 9,
        costMicroUsd: 4_000_000_000_123,
        status: 499,
        partial: true,
        durationMs: 12.5,
        guardrail: 'block',
        cache: 'bypass\tx',
        savedMicroUsd: 2 ** 40,
      });
      ledger.record(odd);
      await ledger.close();
      const [got] = await allRecords(database);
      assert.deepEqual(
        { ...got },
        {
          at: '2026-11-30T23:59:59.123Z',
          requestId: odd.requestId,
          team: odd.team,
          keyId: odd.keyId,
          endpoint: odd.endpoint,
          model: odd.model,
          provider: odd.provider,
          candidate: odd.candidate,
          inputTokens: odd.inputTokens,
          outputTokens: 0,
          cacheReadTokens: 7,
          cacheWriteTokens: 9,
          costMicroUsd: odd.costMicroUsd,
          status: 499,
          partial: true,
          durationMs: 12.5,
          guardrail: 'block',
          cache: 'bypass\tx',
          savedMicroUsd: 2 ** 40,
        },
      );
      const [total] = await usageTotals(database, EVERYTHING, {}, ['team', 'key', 'model', 'day']);
      assert.deepEqual(
        [total?.group.team, total?.group.key, total?.group.model, total?.group.day],
        [odd.team, odd.keyId, odd.model, '2026-11-30'],
      );
      assert.equal(total?.costMicroUsd, odd.costMicroUsd);
      assert.deepEqual(
        [total?.cacheHits, total?.savedMicroUsd],
        [0, 2 ** 40],
        'only a hit counts as one, but the rollup adds what any row saved',
      );
    });

    it('drops and counts rows past a full queue without waiting, and writes one row that says how many were lost', async (t) => {
      if (skip) return t.skip(skip);
      const database = await fresh();
      const lostCounts: number[] = [];
      const ledger = new Ledger(database, { queueRows: 10, retentionDays: 30, onLost: (n) => lostCounts.push(n) });
      const now = Date.now();
      for (let i = 0; i < 15; i++) ledger.record(row(i, now));
      assert.equal(ledger.depth, 10);
      assert.equal(ledger.lost, 5);
      assert.equal(
        lostCounts.reduce((s, n) => s + n, 0),
        5,
      );
      await ledger.flush();
      await ledger.close();
      const written = await allRecords(database);
      const loss = written.filter((w) => w.endpoint === 'ledger');
      assert.equal(loss.length, 1);
      assert.equal(loss[0]?.requestId, 'lost-5');
      assert.equal(loss[0]?.status, 0);
      assert.equal(written.length, 11);
      const [total] = await usageTotals(database, EVERYTHING, {}, []);
      assert.equal(total?.requests, 10, 'the loss row is not a request');
    });

    it('prunes raw rows past the retention and keeps the rollups', async (t) => {
      if (skip) return t.skip(skip);
      const database = await fresh();
      const realNow = Date.now();
      let clock = realNow - 40 * DAY_MS;
      // A ledger that started 40 days ago made that day's partition (Postgres), and wrote a row then.
      const past = new Ledger(database, { queueRows: 1000, retentionDays: 30, now: () => clock });
      await past.start();
      for (let i = 0; i < 20; i++) past.record(row(i, clock));
      // A day with no partition of its own: its rows are in the default partition.
      for (let i = 20; i < 30; i++) past.record(row(i, realNow - 50 * DAY_MS));
      for (let i = 30; i < 35; i++) past.record(row(i, realNow));
      await past.close();
      const oldDay = new Date(realNow - 40 * DAY_MS).toISOString().slice(0, 10);
      if (engine === 'postgres') assert.ok((await dayPartitions(database)).includes(partitionName(oldDay)));
      assert.equal((await allRecords(database)).length, 35);

      clock = realNow;
      const today = new Ledger(database, { queueRows: 1000, retentionDays: 30, now: () => clock });
      await today.upkeep();
      await today.close();
      const left = await allRecords(database);
      assert.deepEqual(
        left.map((r) => r.requestId),
        Array.from({ length: 5 }, (_, i) => row(30 + i, realNow).requestId),
      );
      const [total] = await usageTotals(database, EVERYTHING, {}, []);
      assert.equal(total?.requests, 35, 'the rollups keep every day');
      if (engine === 'postgres') {
        const partitions = await dayPartitions(database);
        assert.equal(partitions.includes(partitionName(oldDay)), false, 'the old day partition is dropped');
        assert.ok(partitions.includes(partitionName(new Date(realNow).toISOString().slice(0, 10))));
      }
    });

    if (engine === 'postgres') {
      it('keeps a batch the database refused and writes it once connections are allowed again, losing nothing', async (t) => {
        if (skip) return t.skip(skip);
        const database = await fresh();
        const name = new URL((test as TestDatabase).url).pathname.slice(1);
        const problems: string[] = [];
        const ledger = new Ledger(database, { queueRows: 1000, retentionDays: 30, onProblem: (p) => problems.push(p) });
        await ledger.start();
        const reopen = await refuseConnections(name);
        try {
          const now = Date.now();
          // Every fifth a cache hit: the retry's rollups, summed in SQL, count them as the first attempt's do.
          for (let i = 0; i < 50; i++) ledger.record(row(i, now, i % 5 === 0 ? { cache: 'hit', costMicroUsd: 0, savedMicroUsd: 250 } : {}));
          await ledger.flush();
          assert.equal(ledger.depth, 50, 'the refused batch is still queued');
          assert.ok(problems.length > 0, 'the failure is reported');
        } finally {
          await reopen();
        }
        const deadline = Date.now() + 30_000;
        while (ledger.depth > 0 && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
          await ledger.flush();
        }
        await ledger.close();
        assert.equal(ledger.lost, 0);
        assert.equal((await allRecords(database)).length, 50);
        const [total] = await usageTotals(database, EVERYTHING, {}, []);
        assert.deepEqual([total?.requests, total?.cacheHits, total?.savedMicroUsd], [50, 10, 2500]);
      });

      it('summarizes every row lost while the database refused in one row, however many retries failed', async (t) => {
        if (skip) return t.skip(skip);
        const database = await fresh();
        const name = new URL((test as TestDatabase).url).pathname.slice(1);
        const ledger = new Ledger(database, { queueRows: 10, retentionDays: 30 });
        const reopen = await refuseConnections(name);
        try {
          const now = Date.now();
          for (let i = 0; i < 15; i++) ledger.record(row(i, now));
          await ledger.flush();
          for (let i = 15; i < 20; i++) ledger.record(row(i, now));
          assert.equal(ledger.lost, 10);
        } finally {
          await reopen();
        }
        await ledger.close(30_000);
        const loss = (await allRecords(database)).filter((w) => w.endpoint === 'ledger');
        assert.deepEqual(
          loss.map((w) => w.requestId),
          ['lost-10'],
        );
      });

      it('writes a batch whose commit answer was lost once, its loss row included, and the losses after it in a row of their own', async (t) => {
        if (skip) return t.skip(skip);
        await fresh();
        const proxy = await PgFaultProxy.start((test as TestDatabase).url);
        const database = openDatabase({ url: proxy.via((test as TestDatabase).url) });
        opened.push(database);
        try {
          const ledger = new Ledger(database, { queueRows: 10, retentionDays: 30 });
          const now = Date.now();
          for (let i = 0; i < 15; i++) ledger.record(row(i, now));
          const lost = proxy.loseCommitAnswer((statements) => statements.some((s) => /^copy usage_/i.test(s.trim())));
          await ledger.flush();
          await lost;
          assert.equal(ledger.depth, 10, 'the batch whose answer was lost is kept for a retry');
          for (let i = 15; i < 18; i++) ledger.record(row(i, now));
          // The retry waits out its backoff; then the 10 rows and two loss rows are in.
          for (let i = 0; i < 300 && ledger.written < 12; i++) {
            await new Promise((r) => setTimeout(r, 100));
            await ledger.flush();
          }
          await ledger.close();
          assert.equal(ledger.depth, 0);
          const written = await allRecords(database);
          assert.equal(written.filter((w) => w.endpoint !== 'ledger').length, 10, 'each request once');
          assert.deepEqual(
            written
              .filter((w) => w.endpoint === 'ledger')
              .map((w) => w.requestId)
              .sort(),
            ['lost-3', 'lost-5'],
          );
          const [total] = await usageTotals(database, EVERYTHING, {}, []);
          assert.equal(total?.requests, 10, 'the rollups count each request once');
        } finally {
          await proxy.close();
        }
      });
    }
  });
}

/** Ends every connection to database `name` and refuses new ones; the returned function lets them in again. */
async function refuseConnections(name: string): Promise<() => Promise<void>> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
  return async () => {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    await admin.end();
  };
}
