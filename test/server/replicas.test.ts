import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { postgresDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, configText, type GatewayProcess, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { deleteKeysWithPrefix, freePort, startRedis, stopRedis } from '../support/redis.js';

// Two gateway processes sharing a database (or governance's Redis): each one's heartbeat
// lists it in /admin/v1/replicas with its generation and topology digest, the digest is the
// x-switchyard-topology its answers carry, and a replica that has not applied a change the
// other has is marked behind once database.recheck_ms has passed.

const ADMIN = 'replicas-admin-token-0123456789';
const READER = 'replicas-reader-token-0123456789';
const TEAM = 'replicas-team-token-0123456789';
const ENV = { REPLICAS_ADMIN: ADMIN, REPLICAS_READER: READER, REPLICAS_TEAM: TEAM };
const RECHECK_MS = 400;
/** A generous bound on how long a state the heartbeats lead to may take to show. */
const HANG_MS = 20_000;

interface ReplicaRow {
  instance: string;
  generation: number;
  digest: string;
  built_at: string;
  heartbeat_at: string;
  digest_since: string;
  last_reload_error: string | null;
  behind: boolean;
}

interface ReplicasBody {
  data: ReplicaRow[];
  newest_digest: string | null;
  instance: string;
  store: string;
}

function config(mockUrl: string, extra: Record<string, unknown>, model = 'gpt-4o'): Record<string, unknown> {
  return baseConfig(
    { east: mockUrl },
    { 'gpt-4o-mini': { candidates: [{ provider: 'east', model }] } },
    {
      server: {
        admin_token: { env: 'REPLICAS_ADMIN' },
        admin_tokens: [
          { id: 'reader', role: 'read_only', token: { env: 'REPLICAS_READER' } },
          { id: 'team-a', role: 'team:a', token: { env: 'REPLICAS_TEAM' } },
        ],
      },
      pricing: { models: { 'gpt-4o': { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } } },
      ...extra,
    },
  );
}

/** The same document with every object's keys in reverse order: the same topology, written otherwise. */
function reversed(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversed);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .reverse()
      .map((k) => [k, reversed((v as Record<string, unknown>)[k])]),
  );
}

async function replicas(gw: GatewayProcess, token = READER): Promise<ReplicasBody> {
  const res = await fetch(`${gw.adminUrl}/admin/v1/replicas`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return JSON.parse(text) as ReplicasBody;
}

/** Polls gw's view until `holds` is true of it; fails with the last view after HANG_MS. */
async function until(gw: GatewayProcess, what: string, holds: (b: ReplicasBody) => boolean): Promise<ReplicasBody> {
  const deadline = Date.now() + HANG_MS;
  let last: ReplicasBody | null = null;
  while (Date.now() < deadline) {
    last = await replicas(gw);
    if (holds(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${what} never showed; the last view: ${JSON.stringify(last, null, 2)}`);
}

function rowOf(body: ReplicasBody, gw: GatewayProcess): ReplicaRow {
  const row = body.data.find((r) => r.instance.endsWith(`:${gw.child.pid}`));
  assert.ok(row !== undefined, `no row for pid ${gw.child.pid}: ${JSON.stringify(body.data)}`);
  return row;
}

async function reload(gw: GatewayProcess): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.adminUrl}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function topologyHeader(gw: GatewayProcess): Promise<string | null> {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
  const { response } = await client.chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'which topology?' }] })
    .withResponse();
  return response.headers.get('x-switchyard-topology');
}

describe('replicas sharing a Postgres database', () => {
  let mock: MockProvider;
  let db: TestDatabase | null = null;
  let skip: string | null = null;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let extra: Record<string, unknown>;

  before(async () => {
    const opened = await postgresDatabase();
    if ('skip' in opened) {
      skip = opened.skip;
      return;
    }
    db = opened;
    mock = await startMockProvider({ name: 'east' });
    extra = { database: { url: db.url, recheck_ms: RECHECK_MS } };
    a = await startGatewayProcess(config(mock.baseUrl, extra), { env: ENV });
    // The same topology with every key in another order: the digest must not see it.
    b = await startGatewayProcess(reversed(config(mock.baseUrl, extra)) as object, { env: ENV });
  });

  after(async () => {
    await a?.stop();
    await b?.stop();
    await mock?.close();
    await db?.drop();
  });

  it('lists both replicas with the same digest, none behind, and their answers carry that digest', async (t) => {
    if (skip !== null) return t.skip(skip);
    const view = await until(a, 'both replicas in step', (v) => v.data.length === 2 && v.data.every((r) => !r.behind));
    const [first, second] = view.data as [ReplicaRow, ReplicaRow];
    assert.equal(first.digest, second.digest);
    assert.match(first.digest, /^[0-9a-f]{64}$/);
    assert.equal(view.newest_digest, first.digest);
    assert.equal(view.store, 'database');
    assert.equal(rowOf(view, a).last_reload_error, null);
    assert.equal(view.instance, rowOf(view, a).instance);
    // B sees the same fleet.
    const fromB = await until(b, 'both replicas from B', (v) => v.data.length === 2 && v.data.every((r) => !r.behind));
    assert.deepEqual(
      fromB.data.map((r) => [r.instance, r.digest]),
      view.data.map((r) => [r.instance, r.digest]),
    );
    assert.equal(await topologyHeader(a), first.digest);
    assert.equal(await topologyHeader(b), first.digest);
    // Nothing secret in the view: tokens are references in the config, and never in the records.
    const text = JSON.stringify(view);
    for (const secret of [ADMIN, READER, TEAM]) assert.ok(!text.includes(secret));
  });

  it("marks the replica that has not applied a change as behind, shows a refused reload's error, and clears both once it applies", async (t) => {
    if (skip !== null) return t.skip(skip);
    const before = rowOf(await replicas(a), a).digest;
    a.writeConfig(config(mock.baseUrl, extra, 'gpt-4o-2025'));
    const applied = await reload(a);
    assert.equal(applied.status, 200, JSON.stringify(applied.body));
    const changed = await topologyHeader(a);
    assert.ok(changed !== null && changed !== before, 'a changed route changes the digest');
    const lagging = await until(b, 'B behind A', (v) => rowOf(v, b).behind && v.newest_digest === changed);
    assert.equal(rowOf(lagging, a).digest, changed);
    assert.equal(rowOf(lagging, a).behind, false);
    assert.equal(rowOf(lagging, b).digest, before);
    assert.equal(await topologyHeader(b), before);

    // A refused reload on B: it keeps serving the old digest, and says why.
    const broken = config(mock.baseUrl, extra);
    (broken.routing as { routes: Record<string, unknown> }).routes['gpt-4o-mini'] = { candidates: [{ provider: 'nowhere' }] };
    b.writeConfig(broken);
    const refused = await reload(b);
    assert.equal(refused.status, 422);
    const withError = await until(a, "B's refusal", (v) => rowOf(v, b).last_reload_error !== null);
    assert.match(rowOf(withError, b).last_reload_error as string, /routing\.routes\.gpt-4o-mini\.candidates\[0\]\.provider/);
    assert.equal(rowOf(withError, b).behind, true);

    // B applies the same file as A: in step again, and the error is gone.
    b.writeConfig(config(mock.baseUrl, extra, 'gpt-4o-2025'));
    assert.equal((await reload(b)).status, 200);
    const inStep = await until(
      a,
      'both in step on the new digest',
      (v) => v.data.length === 2 && v.data.every((r) => !r.behind && r.digest === changed && r.last_reload_error === null),
    );
    assert.equal(inStep.newest_digest, changed);
    assert.equal(await topologyHeader(b), changed);
  });

  it('a read-only token reads the replicas; a team token may not, and nothing but GET is taken', async (t) => {
    if (skip !== null) return t.skip(skip);
    assert.equal((await replicas(a, ADMIN)).data.length, 2);
    const team = await fetch(`${a.adminUrl}/admin/v1/replicas`, { headers: { authorization: `Bearer ${TEAM}` } });
    assert.equal(team.status, 403);
    const post = await fetch(`${a.adminUrl}/admin/v1/replicas`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET');
  });

  it('/admin/status has the replicas section', async (t) => {
    if (skip !== null) return t.skip(skip);
    const res = await fetch(`${a.adminUrl}/admin/status`, { headers: { authorization: `Bearer ${READER}` } });
    const status = (await res.json()) as { replicas: ReplicasBody & { error: string | null } };
    assert.equal(status.replicas.data.length, 2);
    assert.equal(status.replicas.error, null);
    assert.equal(status.replicas.store, 'database');
  });

  it('a replica that stops cleanly takes its record with it', async (t) => {
    if (skip !== null) return t.skip(skip);
    const gone = rowOf(await replicas(b), b).instance;
    assert.equal(await b.stop(), 0);
    const left = await replicas(a);
    assert.deepEqual(
      left.data.map((r) => r.instance),
      [rowOf(left, a).instance],
      `${gone} is still listed`,
    );
  });
});

describe('replicas sharing governance Redis, without a database', () => {
  const REDIS_URL = process.env.SWITCHYARD_TEST_REDIS ?? 'redis://127.0.0.1:6379';
  const prefix = `switchyard-test-replicas-${process.pid}:`;
  let mock: MockProvider;
  let a: GatewayProcess;
  let b: GatewayProcess;

  before(async () => {
    mock = await startMockProvider({ name: 'east' });
    const extra = { governance: { store: 'redis', redis_url: REDIS_URL, key_prefix: prefix } };
    a = await startGatewayProcess(config(mock.baseUrl, extra), { env: ENV });
    b = await startGatewayProcess(config(mock.baseUrl, extra), { env: ENV });
  });

  after(async () => {
    await a?.stop();
    await b?.stop();
    await mock?.close();
    await deleteKeysWithPrefix(REDIS_URL, prefix);
  });

  it('lists both replicas with the same digest, none behind', async () => {
    const view = await until(a, 'both replicas in Redis', (v) => v.data.length === 2 && v.data.every((r) => !r.behind));
    assert.equal(view.store, 'redis');
    assert.equal(rowOf(view, a).digest, rowOf(view, b).digest);
    assert.equal(await topologyHeader(b), rowOf(view, b).digest);
    const fromB = await until(b, 'both replicas from B', (v) => v.data.length === 2);
    assert.deepEqual(fromB.data.map((r) => r.instance).sort(), view.data.map((r) => r.instance).sort());
  });
});

describe('a replica with neither a database nor Redis', () => {
  let mock: MockProvider;
  let gw: GatewayProcess;

  before(async () => {
    mock = await startMockProvider({ name: 'east' });
    gw = await startGatewayProcess(config(mock.baseUrl, {}), { env: ENV });
  });

  after(async () => {
    await gw?.stop();
    await mock?.close();
  });

  it('lists itself alone, with the digest its answers carry', async () => {
    const view = await replicas(gw);
    assert.equal(view.store, 'local');
    assert.equal(view.data.length, 1);
    assert.equal(view.data[0]?.behind, false);
    assert.equal(view.data[0]?.digest, await topologyHeader(gw));
  });
});

describe('a replica whose heartbeat store goes away', () => {
  let mock: MockProvider;
  let gw: GatewayProcess;
  let redis: ChildProcess;
  let port: number;
  const prefix = 'switchyard-test-heartbeat-outage:';

  before(async () => {
    port = await freePort();
    redis = await startRedis(port);
    mock = await startMockProvider({ name: 'east' });
    const extra = { governance: { store: 'redis', redis_url: `redis://127.0.0.1:${port}`, key_prefix: prefix } };
    gw = await startGatewayProcess(config(mock.baseUrl, extra), { env: ENV });
  });

  after(async () => {
    await gw?.stop();
    await mock?.close();
    if (redis !== undefined) await stopRedis(redis);
  });

  async function failures(): Promise<number> {
    const res = await fetch(`${gw.adminUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const m = /^switchyard_replica_heartbeat_failures_total\{store="redis"\} (\d+)$/m.exec(await res.text());
    return m === null ? 0 : Number(m[1]);
  }

  async function stored(): Promise<string[]> {
    const client = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 1 });
    try {
      return Object.keys(await client.hgetall(`${prefix}replicas`));
    } finally {
      client.disconnect();
    }
  }

  it('keeps serving, counts each failed beat, logs once per streak, and writes again once the store is back', async () => {
    const instance = (await replicas(gw)).instance;
    const deadline = Date.now() + HANG_MS;
    while (!(await stored()).includes(instance) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await stored(), [instance]);

    await stopRedis(redis);
    await gw.waitForLog((l) => l.msg === 'replica heartbeat not written: other replicas see this one as behind until it is', HANG_MS);
    while ((await failures()) < 2 && Date.now() < deadline + HANG_MS) await new Promise((r) => setTimeout(r, 200));
    assert.ok((await failures()) >= 2, 'two failed beats counted');
    const warned = gw.logs().filter((l) => String(l.msg).startsWith('replica heartbeat not written'));
    assert.equal(warned.length, 1, 'one line for the streak');
    // The view falls back to this replica alone, and says why; answers are still served.
    const status = await fetch(`${gw.adminUrl}/admin/status`, { headers: { authorization: `Bearer ${READER}` } });
    const body = (await status.json()) as { replicas: { store: string; error: string | null; data: unknown[] } };
    assert.equal(body.replicas.data.length, 1);
    assert.match(body.replicas.error ?? '', /could not be read/);
    const outage = await fetch(`${gw.adminUrl}/admin/v1/replicas`, { headers: { authorization: `Bearer ${READER}` } });
    assert.equal(outage.status, 503);
    assert.equal(((await outage.json()) as { error: { code: string } }).error.code, 'store_unavailable');
    assert.ok((await topologyHeader(gw)) !== null);

    redis = await startRedis(port);
    await gw.waitForLog((l) => l.msg === 'replica heartbeat written again', HANG_MS);
    assert.deepEqual(await stored(), [instance]);
  });
});

describe('replicas whose topology comes from the database', () => {
  let mock: MockProvider;
  let db: TestDatabase | null = null;
  let skip: string | null = null;
  let fromFile: GatewayProcess;
  let a: GatewayProcess;
  let b: GatewayProcess;

  before(async () => {
    const opened = await postgresDatabase();
    if ('skip' in opened) {
      skip = opened.skip;
      return;
    }
    db = opened;
    mock = await startMockProvider({ name: 'east' });
    const database = (topology: string) => ({ database: { url: opened.url, recheck_ms: RECHECK_MS, topology } });
    const seedFrom = join(mkdtempSync(join(tmpdir(), 'switchyard-replicas-seed-')), 'seed.yaml');
    writeFileSync(seedFrom, configText(config(mock.baseUrl, database('database'))));
    const seeded = await runCli(['db', 'seed', '--config', seedFrom], ENV);
    assert.equal(seeded.code, 0, seeded.stderr);
    fromFile = await startGatewayProcess(config(mock.baseUrl, database('file')), { env: ENV });
    // Their files route elsewhere: with database.topology "database" only the database's topology serves.
    a = await startGatewayProcess(config(mock.baseUrl, database('database'), 'gpt-4o-ignored'), { env: ENV });
    b = await startGatewayProcess(config(mock.baseUrl, database('database'), 'gpt-4o-ignored'), { env: ENV });
  });

  after(async () => {
    await a?.stop();
    await b?.stop();
    await fromFile?.stop();
    await mock?.close();
    await db?.drop();
  });

  it("has the digest of the same topology read from the file; a write through one replica's API reaches the other, and the file's replica is then behind", async (t) => {
    if (skip !== null) return t.skip(skip);
    const view = await until(a, 'three replicas in step', (v) => v.data.length === 3 && v.data.every((r) => !r.behind));
    assert.equal(new Set(view.data.map((r) => r.digest)).size, 1, JSON.stringify(view.data));
    assert.equal(await topologyHeader(fromFile), await topologyHeader(a));

    const write = await v1(a.adminUrl as string, 'POST', 'routes', {
      token: ADMIN,
      body: { id: 'another', candidates: [{ provider: 'east' }] },
    });
    assert.equal(write.status, 201, write.text);
    const written = write.headers.get('x-switchyard-topology');
    assert.match(written ?? '', /^[0-9a-f]{64}$/, 'the write names the topology it left serving');
    const after = await until(
      fromFile,
      'the database replicas on the new digest, the file one behind',
      (v) => rowOf(v, fromFile).behind && !rowOf(v, a).behind && !rowOf(v, b).behind && rowOf(v, a).digest === rowOf(v, b).digest,
    );
    assert.equal(after.newest_digest, rowOf(after, b).digest);
    assert.equal(rowOf(after, a).digest, written);
    assert.notEqual(rowOf(after, fromFile).digest, after.newest_digest);
    assert.equal(await topologyHeader(b), after.newest_digest);
  });
});
