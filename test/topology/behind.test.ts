import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { postgresDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { v1 } from '../support/managed.js';
import { PgFaultProxy } from '../support/pg-fault-proxy.js';
import { fileResources } from '../support/resources.js';

// A replica cut off from its database's notifications (and its answers: a one-way stall on
// the wire) keeps serving the topology it has; the other replica's view shows it behind, with
// the digest it still serves. Once the stall ends, it applies the write and catches up.

const resources = fileResources('switchyard-topology-behind-');
const ADMIN = 'admin-token-for-the-behind-tests';
const RECHECK_MS = 400;
/** A generous bound on how long a state may take to show: only a hang fails it. */
const HANG_MS = 20_000;

interface Row {
  instance: string;
  digest: string;
  behind: boolean;
}

let east: MockProvider;
before(async () => {
  east = await resources.startMock({ name: 'east' });
});

const config = (url: string): Record<string, unknown> =>
  baseConfig(
    { east: east.baseUrl },
    { m: { candidates: [{ provider: 'east' }] } },
    { server: { admin_token: { env: 'ADMIN_TOKEN' } }, database: { url, recheck_ms: RECHECK_MS } },
  );

async function rows(gw: GatewayProcess): Promise<Row[]> {
  const res = await fetch(`${gw.adminUrl}/admin/v1/replicas`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return ((await res.json()) as { data: Row[] }).data;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + HANG_MS;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) assert.fail(`${what} never showed`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const rowOf = (all: Row[], gw: GatewayProcess): Row | undefined => all.find((r) => r.instance.endsWith(`:${gw.child.pid}`));

describe('a replica whose notifications are blocked', () => {
  let db: TestDatabase | { skip: string };
  let proxy: PgFaultProxy;
  let a: GatewayProcess;
  let b: GatewayProcess;

  before(async () => {
    db = await postgresDatabase();
    if ('skip' in db) return;
    proxy = await PgFaultProxy.start(db.url);
    a = await resources.startGw(config(db.url), { env: { ADMIN_TOKEN: ADMIN } });
    b = await resources.startGw(config(proxy.via(db.url)), { env: { ADMIN_TOKEN: ADMIN } });
  });
  after(async () => {
    if ('skip' in db) return;
    proxy.releaseAnswers();
    await a.stop();
    await b.stop();
    await proxy.close();
    await db.drop();
  });

  it("shows as behind in the other replica's view while it serves the old topology, then catches up", async (t) => {
    if ('skip' in db) return t.skip(db.skip);
    await until('both replicas, on one digest', async () => {
      const all = await rows(a);
      const ra = rowOf(all, a);
      const rb = rowOf(all, b);
      return ra !== undefined && rb !== undefined && ra.digest === rb.digest && !rb.behind ? true : undefined;
    });
    proxy.holdAnswers();
    const made = await v1(a.adminUrl as string, 'POST', 'routes', { token: ADMIN, body: { id: 'n', candidates: [{ provider: 'east' }] } });
    assert.equal(made.status, 201, made.text);
    const written = made.headers.get('x-switchyard-topology');
    assert.ok(written !== null && /^[0-9a-f]{64}$/.test(written), `the write's answer names its topology: ${written}`);
    assert.equal((await postChat(a.url, chatBody('n'))).status, 200);

    const behind = await until('the stalled replica shown behind', async () =>
      rowOf(await rows(a), b)?.behind === true ? rowOf(await rows(a), b) : undefined,
    );
    assert.notEqual(behind?.digest, written, 'it still serves the topology before the write');
    // It still serves what it has: the route it had, not the new one.
    assert.equal((await postChat(b.url, chatBody('m'))).status, 200);
    assert.equal((await postChat(b.url, chatBody('n'))).status, 404);

    proxy.releaseAnswers();
    await until('the stalled replica serving the new route', async () =>
      (await postChat(b.url, chatBody('n'))).status === 200 ? true : undefined,
    );
    const served = await postChat(b.url, chatBody('n'));
    assert.equal(served.headers.get('x-switchyard-topology'), written);
    await until('the replica no longer behind', async () => {
      const row = rowOf(await rows(a), b);
      return row !== undefined && !row.behind && row.digest === written ? true : undefined;
    });
  });
});
