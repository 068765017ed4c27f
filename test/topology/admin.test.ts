import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import pg from 'pg';
import type { MockProvider } from '../../src/mock/index.js';
import { postgresDatabase, sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { fileResources } from '../support/resources.js';

// Providers, routes and prices written through the admin API of real gateway processes, over
// a real SQLite file and the machine's PostgreSQL: served at once by the writing replica and
// within a second by another, refused with the path of what they would break, read-only where
// the config file holds them, and never holding a secret's value.

const resources = fileResources('switchyard-topology-');
const ADMIN = 'admin-token-for-the-topology-tests';
const READER = 'read-only-token-for-the-topology-tests';
/** The upstream key the database must never hold: only its reference. */
const WEST_SECRET = 'sk-west-upstream-secret-value-0123456789';
const CLIENT_KEY = 'sy-topology-client-key';
/** A bound that only catches a hang: how soon a write serves everywhere is measured by `npm run bench -- --only topology-write`. */
const HANG_MS = 10_000;
const ENV = { ADMIN_TOKEN: ADMIN, READER_TOKEN: READER, WEST_KEY: WEST_SECRET, CLIENT_KEY };

let east: MockProvider;
let west: MockProvider;
before(async () => {
  east = await resources.startMock({ name: 'east' });
  west = await resources.startMock({ name: 'west' });
});

function gatewayConfig(databaseUrl: string, database: Record<string, unknown> = {}): Record<string, unknown> {
  return baseConfig(
    { east: east.baseUrl },
    { m: { candidates: [{ provider: 'east' }] } },
    {
      server: {
        admin_token: { env: 'ADMIN_TOKEN' },
        admin_tokens: [{ id: 'reader', token: { env: 'READER_TOKEN' }, role: 'read_only' }],
      },
      teams: { platform: {} },
      keys: [{ id: 'ci', team: 'platform', key: { env: 'CLIENT_KEY' } }],
      database: { url: databaseUrl, recheck_ms: 400, ...database },
    },
  );
}

const westProvider = (): Record<string, unknown> => ({
  id: 'west',
  type: 'openai',
  base_url: west.baseUrl,
  api_key: { env: 'WEST_KEY' },
  timeout_ms: 5000,
  expose_headers: ['x-mock-provider'],
});

function client(gw: GatewayProcess): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CLIENT_KEY, maxRetries: 0 });
}

/** The status (and serving provider) of one chat call for `model`. */
async function chat(gw: GatewayProcess, model: string): Promise<{ status: number; provider: string | null }> {
  try {
    const { response } = await client(gw)
      .chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    return { status: response.status, provider: response.headers.get('x-mock-provider') };
  } catch (err) {
    return { status: (err as { status?: number }).status ?? 0, provider: null };
  }
}

/** Polls until `model` answers `status`; the milliseconds it took. Throws after `withinMs`. */
async function untilStatus(gw: GatewayProcess, model: string, status: number, withinMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const got = await chat(gw, model);
    const elapsed = performance.now() - started;
    if (got.status === status) return elapsed;
    if (elapsed > withinMs) throw new Error(`${model} still answers ${got.status} after ${Math.round(elapsed)} ms (waited for ${status})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every byte of the SQLite database (its WAL too): no secret may be among them. */
function sqliteBytes(url: string): string {
  const path = url.slice('sqlite:'.length);
  return [path, `${path}-wal`]
    .filter((f) => existsSync(f))
    .map((f) => readFileSync(f).toString('latin1'))
    .join('');
}

describe('providers, routes and prices through the admin API, on SQLite (merged)', () => {
  let db: TestDatabase;
  let gw: GatewayProcess;
  let admin: string;

  before(async () => {
    db = sqliteDatabase();
    const dir = resources.tempDir();
    gw = await resources.startGw({ ...gatewayConfig(db.url), audit: { file: join(dir, 'audit.jsonl') } }, { dir, env: ENV });
    admin = gw.adminUrl as string;
  });
  after(async () => {
    await gw.stop();
    await db.drop();
  });

  it('creates a provider and a route that serve at once, with their ETags and the reload they caused', async () => {
    const provider = await v1(admin, 'POST', 'providers', { token: ADMIN, body: westProvider() });
    assert.equal(provider.status, 201, provider.text);
    assert.equal(provider.headers.get('etag'), '"1"');
    assert.equal(provider.headers.get('x-switchyard-reload'), 'applied');
    assert.equal(provider.body.managed_by, 'database');
    assert.deepEqual(provider.body.api_key, { env: 'WEST_KEY' });
    assert.ok(!provider.text.includes(WEST_SECRET));
    const route = await v1(admin, 'POST', 'routes', { token: ADMIN, body: { id: 'w', candidates: [{ provider: 'west' }] } });
    assert.equal(route.status, 201, route.text);
    assert.ok(Number(route.headers.get('x-switchyard-generation')) > Number(provider.headers.get('x-switchyard-generation')) - 1);
    // Applied before the answer: the very next call is served by the new provider.
    const served = await chat(gw, 'w');
    assert.deepEqual(served, { status: 200, provider: 'west' });
    assert.ok(west.stats().total > 0);
  });

  it("lists the file's objects (read-only) beside the database's, and reads one of each", async () => {
    const list = await v1(admin, 'GET', 'providers', { token: READER });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((p: Record<string, unknown>) => [p.id, p.managed_by]),
      [
        ['east', 'config'],
        ['west', 'database'],
      ],
    );
    const routes = await v1(admin, 'GET', 'routes', { token: READER });
    assert.deepEqual(
      routes.body.data.map((r: Record<string, unknown>) => [r.id, r.managed_by]),
      [
        ['m', 'config'],
        ['w', 'database'],
      ],
    );
    const one = await v1(admin, 'GET', 'routes/w', { token: READER });
    assert.equal(one.status, 200);
    assert.equal(one.headers.get('etag'), '"1"');
    assert.equal((await v1(admin, 'GET', 'providers/nowhere', { token: READER })).status, 404);
    const status = (await (await fetch(`${admin}/admin/status`, { headers: { authorization: `Bearer ${READER}` } })).json()) as Record<
      string,
      any
    >;
    assert.equal(status.topology.source, 'merged');
    assert.equal(status.topology.from_database.providers, 1);
    assert.equal(status.topology.from_database.routes, 1);
  });

  it('refuses a stale ETag with 412 and changes nothing; the current one applies', async () => {
    const stale = await v1(admin, 'PATCH', 'routes/w', {
      token: ADMIN,
      ifMatch: '"7"',
      body: { candidates: [{ provider: 'east' }] },
    });
    assert.equal(stale.status, 412, stale.text);
    assert.equal(stale.body.error.code, 'precondition_failed');
    assert.equal((await chat(gw, 'w')).provider, 'west');
    const fresh = await v1(admin, 'PATCH', 'routes/w', { token: ADMIN, ifMatch: '"1"', body: { candidates: [{ provider: 'east' }] } });
    assert.equal(fresh.status, 200, fresh.text);
    assert.equal(fresh.headers.get('etag'), '"2"');
    assert.equal((await chat(gw, 'w')).provider, 'east');
    const back = await v1(admin, 'PATCH', 'routes/w', { token: ADMIN, ifMatch: '"2"', body: { candidates: [{ provider: 'west' }] } });
    assert.equal(back.status, 200, back.text);
  });

  it('refuses a write that would break the generation, naming the path, and commits nothing', async () => {
    const before = await v1(admin, 'GET', 'routes', { token: READER });
    const orphan = await v1(admin, 'POST', 'routes', { token: ADMIN, body: { id: 'orphan', candidates: [{ provider: 'nowhere' }] } });
    assert.equal(orphan.status, 409, orphan.text);
    assert.equal(orphan.body.error.code, 'conflict');
    assert.ok(
      orphan.body.error.errors.some((e: { path: string }) => e.path === 'routing.routes.orphan.candidates[0].provider'),
      orphan.text,
    );
    assert.equal((await v1(admin, 'GET', 'routes/orphan', { token: READER })).status, 404);
    const used = await v1(admin, 'DELETE', 'providers/west', { token: ADMIN });
    assert.equal(used.status, 409, used.text);
    assert.ok(
      used.body.error.errors.some((e: { path: string }) => e.path.startsWith('routing.routes.w.')),
      used.text,
    );
    assert.equal((await v1(admin, 'GET', 'providers/west', { token: READER })).status, 200);
    // A reference that does not resolve is the build's refusal too.
    const unresolved = await v1(admin, 'POST', 'providers', {
      token: ADMIN,
      body: { ...westProvider(), id: 'north', api_key: { env: 'NOT_SET_ANYWHERE' } },
    });
    assert.equal(unresolved.status, 409, unresolved.text);
    assert.ok(
      unresolved.body.error.errors.some((e: { path: string }) => e.path === 'providers.north.api_key'),
      unresolved.text,
    );
    assert.deepEqual((await v1(admin, 'GET', 'routes', { token: READER })).body, before.body);
  });

  it('refuses bad bodies by path, a literal secret among them, and writes by a read-only token', async () => {
    const literal = await v1(admin, 'POST', 'providers', { token: ADMIN, body: { ...westProvider(), id: 'lit', api_key: WEST_SECRET } });
    assert.equal(literal.status, 400, literal.text);
    assert.equal(literal.body.error.param, 'api_key');
    assert.ok(!literal.text.includes(WEST_SECRET));
    const unknown = await v1(admin, 'POST', 'routes', {
      token: ADMIN,
      body: { id: 'x', candidates: [{ provider: 'east' }], colour: 'red' },
    });
    assert.equal(unknown.status, 400, unknown.text);
    assert.equal(unknown.body.error.errors[0].path, 'colour');
    const noName = await v1(admin, 'POST', 'routes', { token: ADMIN, body: { candidates: [{ provider: 'east' }] } });
    assert.equal(noName.status, 400);
    assert.equal(noName.body.error.param, 'id');
    const reader = await v1(admin, 'POST', 'routes', { token: READER, body: { id: 'r', candidates: [{ provider: 'east' }] } });
    assert.equal(reader.status, 403);
    const notJson = await fetch(`${admin}/admin/v1/providers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: '{',
    });
    assert.equal(notJson.status, 400);
  });

  it("keeps the config file's objects read-only (409 managed_by_config)", async () => {
    const patch = await v1(admin, 'PATCH', 'providers/east', { token: ADMIN, body: { timeout_ms: 1000 } });
    assert.equal(patch.status, 409, patch.text);
    assert.equal(patch.body.error.code, 'managed_by_config');
    const shadow = await v1(admin, 'POST', 'routes', { token: ADMIN, body: { id: 'm', candidates: [{ provider: 'west' }] } });
    assert.equal(shadow.status, 409);
    assert.equal(shadow.body.error.code, 'managed_by_config');
    assert.equal((await v1(admin, 'DELETE', 'routes/m', { token: ADMIN })).status, 409);
  });

  it('prices a model through /admin/v1/pricing, and the next answer carries its cost', async () => {
    const price = await v1(admin, 'POST', 'pricing', {
      token: ADMIN,
      body: { model: 'west/w', input_usd_per_mtok: 1000, output_usd_per_mtok: 2000 },
    });
    assert.equal(price.status, 201, price.text);
    assert.equal(price.body.model, 'west/w');
    const { response } = await client(gw)
      .chat.completions.create({ model: 'w', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.ok(Number(response.headers.get('x-switchyard-cost-usd')) > 0, response.headers.get('x-switchyard-cost-usd') ?? 'no cost');
    const bad = await v1(admin, 'POST', 'pricing', { token: ADMIN, body: { model: 'y', input_usd_per_mtok: -1, output_usd_per_mtok: 1 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.errors[0].path, 'input_usd_per_mtok');
  });

  it('lets the file win a name it gains later that the database also holds, and says so in the reload', async () => {
    assert.equal(
      (await v1(admin, 'POST', 'routes', { token: ADMIN, body: { id: 'late', candidates: [{ provider: 'west' }] } })).status,
      201,
    );
    assert.equal((await chat(gw, 'late')).provider, 'west');
    const withLate: Record<string, unknown> = { ...gatewayConfig(db.url), audit: { file: join(gw.dir, 'audit.jsonl') } };
    (withLate.routing as { routes: Record<string, unknown> }).routes.late = { candidates: [{ provider: 'east' }] };
    gw.writeConfig(withLate);
    const reload = await fetch(`${admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
    const result = (await reload.json()) as { result: string; warnings: string[] };
    assert.equal(result.result, 'applied', JSON.stringify(result));
    assert.ok(
      result.warnings.some((w) => w.includes('routing.routes.late') && w.includes("the file's is used")),
      JSON.stringify(result.warnings),
    );
    assert.equal((await chat(gw, 'late')).provider, 'east');
    assert.equal((await v1(admin, 'GET', 'routes/late', { token: READER })).body.managed_by, 'config');
    // Back as it was: the file without it, and the database's row gone.
    gw.writeConfig({ ...gatewayConfig(db.url), audit: { file: join(gw.dir, 'audit.jsonl') } });
    await fetch(`${admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal((await v1(admin, 'DELETE', 'routes/late', { token: ADMIN })).status, 204);
  });

  it('audits each topology write with its object and outcome', async () => {
    const audit = join(gw.dir, 'audit.jsonl');
    await v1(admin, 'POST', 'routes', { token: ADMIN, body: { id: 'audited', candidates: [{ provider: 'east' }] } });
    await v1(admin, 'POST', 'routes', { token: ADMIN, body: { id: 'refused', candidates: [{ provider: 'nowhere' }] } });
    // The audit writer appends off the request path: read until both records are there.
    let records: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 100; i++) {
      records = readFileSync(audit, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((r) => r.object === 'route');
      if (records.some((r) => r.object_id === 'audited') && records.filter((r) => r.reason === 'conflict').length >= 2) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(
      records.some((r) => r.object_id === 'audited' && r.outcome === 'applied'),
      JSON.stringify(records),
    );
    // A create names its object in the body: a refused one before the body was judged has none.
    assert.ok(records.filter((r) => r.outcome === 'refused' && r.reason === 'conflict').length >= 2, JSON.stringify(records));
  });

  it('creates an MCP server and a tool route that a client calls at once, and deletes them', async () => {
    const tools = await resources.startMock({ name: 'toolbox', protocol: 'mcp' });
    const server = await v1(admin, 'POST', 'providers', {
      token: ADMIN,
      body: { id: 'toolbox', type: 'mcp', base_url: `${tools.origin}/mcp`, timeout_ms: 2000 },
    });
    assert.equal(server.status, 201, server.text);
    const route = await v1(admin, 'POST', 'tool-routes', { token: ADMIN, body: { id: 'echo', candidates: [{ provider: 'toolbox' }] } });
    assert.equal(route.status, 201, route.text);
    assert.equal((await v1(admin, 'GET', 'tool-routes/echo', { token: READER })).body.managed_by, 'database');
    // A tool route naming a model provider is refused by the generation's own rule.
    const wrong = await v1(admin, 'POST', 'tool-routes', { token: ADMIN, body: { id: 'weather', candidates: [{ provider: 'east' }] } });
    assert.equal(wrong.status, 409, wrong.text);
    assert.ok(
      wrong.body.error.errors.some((e: { path: string }) => e.path.startsWith('routing.tools.weather')),
      wrong.text,
    );
    // The answer names the topology that served it, as a model answer does.
    const init = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    await init.arrayBuffer();
    const { response } = await client(gw)
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(init.headers.get('x-switchyard-topology'), response.headers.get('x-switchyard-topology'));
    assert.match(init.headers.get('x-switchyard-topology') ?? '', /^[0-9a-f]{64}$/);
    const mcp = new Client({ name: 'topology-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', gw.url), { requestInit: { headers: { authorization: `Bearer ${CLIENT_KEY}` } } }),
    );
    try {
      const result = (await mcp.callTool({ name: 'echo', arguments: { text: 'hello' } })) as { content: Array<{ text?: string }> };
      assert.match(result.content.map((c) => c.text ?? '').join(''), /toolbox/);
    } finally {
      await mcp.close();
    }
    assert.equal((await v1(admin, 'DELETE', 'tool-routes/echo', { token: ADMIN })).status, 204);
    assert.equal((await v1(admin, 'DELETE', 'providers/toolbox', { token: ADMIN })).status, 204);
  });

  it('deletes a route and a provider: refused at once, and the database never held the secret', async () => {
    const gone = await v1(admin, 'DELETE', 'routes/w', { token: ADMIN });
    assert.equal(gone.status, 204, gone.text);
    assert.equal((await chat(gw, 'w')).status, 404);
    await v1(admin, 'DELETE', 'pricing/west%2Fw', { token: ADMIN });
    const provider = await v1(admin, 'DELETE', 'providers/west', { token: ADMIN });
    assert.equal(provider.status, 204, provider.text);
    const bytes = sqliteBytes(db.url);
    assert.ok(bytes.includes('WEST_KEY'), 'the reference is stored');
    assert.ok(!bytes.includes(WEST_SECRET), 'the secret is not');
  });
});

describe('two replicas on PostgreSQL', () => {
  let db: TestDatabase | { skip: string };
  let a: GatewayProcess;
  let b: GatewayProcess;

  before(async () => {
    db = await postgresDatabase();
    if ('skip' in db) return;
    a = await resources.startGw(gatewayConfig(db.url), { env: ENV });
    b = await resources.startGw(gatewayConfig(db.url), { env: ENV });
  });
  after(async () => {
    if ('skip' in db) return;
    await a.stop();
    await b.stop();
    await db.drop();
  });

  it('a provider and route created on one replica serve on both, and once deleted are refused on both (how soon: the topology-write bench)', async (t) => {
    if ('skip' in db) return t.skip(db.skip);
    assert.equal((await v1(a.adminUrl as string, 'POST', 'providers', { token: ADMIN, body: westProvider() })).status, 201);
    const route = await v1(a.adminUrl as string, 'POST', 'routes', { token: ADMIN, body: { id: 'w', candidates: [{ provider: 'west' }] } });
    assert.equal(route.status, 201, route.text);
    assert.equal((await chat(a, 'w')).status, 200);
    await untilStatus(b, 'w', 200, HANG_MS);
    assert.equal((await chat(b, 'w')).provider, 'west');
    // Deleted on the other replica this time.
    assert.equal((await v1(b.adminUrl as string, 'DELETE', 'routes/w', { token: ADMIN })).status, 204);
    assert.equal((await v1(b.adminUrl as string, 'DELETE', 'providers/west', { token: ADMIN })).status, 204);
    assert.equal((await chat(b, 'w')).status, 404);
    await untilStatus(a, 'w', 404, HANG_MS);
  });

  it("reports, on each write's answer, the reload that applied it (its own notification is not another change)", async (t) => {
    if ('skip' in db) return t.skip(db.skip);
    for (let i = 0; i < 10; i++) {
      const made = await v1(a.adminUrl as string, 'POST', 'routes', {
        token: ADMIN,
        body: { id: `r${i}`, candidates: [{ provider: 'east' }] },
      });
      assert.equal(made.status, 201, made.text);
      assert.equal(made.headers.get('x-switchyard-reload'), 'applied', `write ${i}`);
      const gone = await v1(a.adminUrl as string, 'DELETE', `routes/r${i}`, { token: ADMIN });
      assert.equal(gone.headers.get('x-switchyard-reload'), 'applied', `delete ${i}`);
    }
  });

  it('a stale ETag from the other replica is 412', async (t) => {
    if ('skip' in db) return t.skip(db.skip);
    const made = await v1(a.adminUrl as string, 'POST', 'routes', { token: ADMIN, body: { id: 'p', candidates: [{ provider: 'east' }] } });
    assert.equal(made.status, 201, made.text);
    const changed = await v1(b.adminUrl as string, 'PATCH', 'routes/p', { token: ADMIN, ifMatch: '"1"', body: { policy: 'random' } });
    assert.equal(changed.status, 200, changed.text);
    const stale = await v1(a.adminUrl as string, 'PATCH', 'routes/p', { token: ADMIN, ifMatch: '"1"', body: { policy: 'ordered' } });
    assert.equal(stale.status, 412, stale.text);
  });

  it("holds no secret's value in any table after every kind of write", async (t) => {
    if ('skip' in db) return t.skip(db.skip);
    const url = (db as TestDatabase).url;
    await v1(a.adminUrl as string, 'POST', 'providers', { token: ADMIN, body: westProvider() });
    await v1(a.adminUrl as string, 'PATCH', 'providers/west', { token: ADMIN, body: { timeout_ms: 4000 } });
    await v1(a.adminUrl as string, 'POST', 'pricing', {
      token: ADMIN,
      body: { model: 'm', input_usd_per_mtok: 1, output_usd_per_mtok: 1 },
    });
    await v1(a.adminUrl as string, 'POST', 'routes', { token: ADMIN, body: { id: 'sw', candidates: [{ provider: 'west' }] } });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const tables = await client.query<{ table_name: string }>(
        "select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'",
      );
      let stored = '';
      for (const { table_name } of tables.rows) {
        const rows = await client.query(`select * from "${table_name}"`);
        stored += JSON.stringify(rows.rows);
      }
      assert.ok(stored.includes('WEST_KEY'), 'the reference is stored');
      assert.ok(!stored.includes(WEST_SECRET));
      assert.ok(!stored.includes(ADMIN) && !stored.includes(CLIENT_KEY));
    } finally {
      await client.end();
    }
  });
});
