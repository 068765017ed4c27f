import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { MockProvider } from '../../src/mock/index.js';
import { postgresDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { PgFaultProxy } from '../support/pg-fault-proxy.js';
import { fileResources } from '../support/resources.js';

// The usage ledger when PostgreSQL commits a batch but its answer never reaches the
// gateway: a real gateway process writes its ledger through a proxy that forwards the
// ledger transaction's COMMIT, drops the answer and cuts the connection. The gateway
// retries the batch; the database must still hold each request once.

const resources = fileResources('switchyard-ledger-lost-commit-');
const REQUESTS = 50;

let east: MockProvider;
before(async () => {
  east = await resources.startMock({ name: 'east' });
});

async function counts(url: string): Promise<{ raw: number; rollups: number; ids: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const raw = await c.query<{ n: string; ids: string }>(
      `select count(*) as n, count(distinct request_id) as ids from usage_requests where endpoint <> 'ledger'`,
    );
    const rollups = await c.query<{ n: string | null }>('select sum(requests) as n from usage_daily');
    return { raw: Number(raw.rows[0]?.n), ids: Number(raw.rows[0]?.ids), rollups: Number(rollups.rows[0]?.n ?? 0) };
  } finally {
    await c.end();
  }
}

describe('the usage ledger on PostgreSQL when a commit answer is lost', () => {
  let db: TestDatabase | null = null;
  let proxy: PgFaultProxy | null = null;
  after(async () => {
    await proxy?.close();
    await db?.drop();
  });

  it('counts a batch the database committed once, though the gateway retries it: raw rows and rollups equal the requests sent', async (t) => {
    const made = await postgresDatabase();
    if ('skip' in made) return t.skip(made.skip);
    db = made;
    proxy = await PgFaultProxy.start(made.url);
    const gw = await resources.startGw(
      baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }, { database: { url: proxy.via(made.url) } }),
    );
    // Armed once the gateway has migrated: the first ledger batch's COMMIT answer is lost.
    const lost = proxy.loseCommitAnswer((statements) => statements.some((s) => /^copy usage_/i.test(s.trim())));
    for (let i = 0; i < REQUESTS; i++) {
      const res = await postChat(gw.url, chatBody('m'), { 'x-request-id': `lost-commit-${i}` });
      assert.equal(res.status, 200);
    }
    const cut = await Promise.race([lost, sleep(20_000).then(() => null)]);
    assert.ok(cut !== null, 'the proxy saw a ledger COMMIT and lost its answer');
    // The retried batch (backoff 250 ms) and every later one: wait until all are in, then a little longer.
    for (let i = 0; i < 200 && (await counts(made.url)).raw < REQUESTS; i++) await sleep(100);
    await gw.stop();
    const after = await counts(made.url);
    assert.deepEqual(after, { raw: REQUESTS, rollups: REQUESTS, ids: REQUESTS });
    assert.ok(
      gw.output.some((line) => /usage ledger/.test(line) && /not written/.test(line)),
      'the gateway saw the batch fail and retried it',
    );
  });
});
