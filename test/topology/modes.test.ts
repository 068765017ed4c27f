import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { MockProvider } from '../../src/mock/index.js';
import { sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess, runCli } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { v1 } from '../support/managed.js';
import { fileResources } from '../support/resources.js';

// The three sources of truth of database.topology through real gateway processes and the real
// CLI: the file alone, the database alone after one seed (a deleted provider stays deleted,
// whatever the file says and however often the seed runs), and the export that prints what
// serves, which validate accepts and a gateway without the database serves the same.

const resources = fileResources('switchyard-topology-modes-');
const ADMIN = 'admin-token-for-the-topology-mode-tests';
const ENV = { ADMIN_TOKEN: ADMIN, EAST_KEY: 'sk-east-never-in-the-database' };

let east: MockProvider;
let west: MockProvider;
before(async () => {
  east = await resources.startMock({ name: 'east' });
  west = await resources.startMock({ name: 'west' });
});

function config(databaseUrl: string | null, topology: string): Record<string, unknown> {
  const c = baseConfig(
    { east: east.baseUrl, west: west.baseUrl },
    { m: { candidates: [{ provider: 'east' }] }, w: { candidates: [{ provider: 'west' }] } },
    {
      server: { admin_token: { env: 'ADMIN_TOKEN' } },
      pricing: { models: { m: { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } } },
      ...(databaseUrl === null ? {} : { database: { url: databaseUrl, recheck_ms: 400, topology } }),
    },
  );
  const providers = c.providers as Record<string, Record<string, unknown>>;
  providers.east = { ...providers.east, api_key: { env: 'EAST_KEY' } };
  return c;
}

async function status(gw: GatewayProcess, model: string): Promise<number> {
  return (await postChat(gw.url, chatBody(model))).status;
}

function writeConfig(dir: string, name: string, value: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(path, stringify(value));
  return path;
}

describe('database.topology: file', () => {
  let db: TestDatabase;
  let gw: GatewayProcess;
  before(async () => {
    db = sqliteDatabase();
    gw = await resources.startGw(config(db.url, 'file'), { env: ENV });
  });
  after(async () => {
    await gw.stop();
    await db.drop();
  });

  it("lists the file's topology and answers every write with 409 managed_by_config", async () => {
    const admin = gw.adminUrl as string;
    const list = await v1(admin, 'GET', 'providers', { token: ADMIN });
    assert.deepEqual(
      list.body.data.map((p: Record<string, unknown>) => [p.id, p.managed_by]),
      [
        ['east', 'config'],
        ['west', 'config'],
      ],
    );
    const create = await v1(admin, 'POST', 'routes', { token: ADMIN, body: { id: 'n', candidates: [{ provider: 'east' }] } });
    assert.equal(create.status, 409, create.text);
    assert.equal(create.body.error.code, 'managed_by_config');
    assert.match(create.body.error.message, /database\.topology is "file"/);
    assert.equal(
      (await v1(admin, 'POST', 'pricing', { token: ADMIN, body: { model: 'x', input_usd_per_mtok: 1, output_usd_per_mtok: 1 } })).status,
      409,
    );
  });
});

describe('database.topology: database, seeded once', () => {
  let db: TestDatabase;
  let dir: string;
  let path: string;

  before(() => {
    db = sqliteDatabase();
    dir = resources.tempDir();
    path = writeConfig(dir, 'switchyard.yaml', config(db.url, 'database'));
  });
  after(async () => {
    await db.drop();
  });

  it('serves the file with a warning before the seed, and refuses writes until then', async () => {
    const gw = await resources.startGw(config(db.url, 'database'), { env: ENV });
    try {
      assert.equal(await status(gw, 'm'), 200);
      assert.ok(
        gw.output.some((l) => l.includes('never seeded')),
        'a warning says the file serves until the seed',
      );
      const write = await v1(gw.adminUrl as string, 'POST', 'routes', {
        token: ADMIN,
        body: { id: 'n', candidates: [{ provider: 'east' }] },
      });
      assert.equal(write.status, 409, write.text);
      assert.match(write.body.error.message, /db seed/);
    } finally {
      await gw.stop();
    }
  });

  it('seeds once; a provider deleted through the API stays deleted through a second seed and a restart', async () => {
    const first = await runCli(['db', 'seed', '--config', path], ENV);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /2 provider\(s\), 2 route\(s\), 0 tool route\(s\), 1 price\(s\)/);
    const gw = await resources.startGw(config(db.url, 'database'), { env: ENV });
    const admin = gw.adminUrl as string;
    const providers = await v1(admin, 'GET', 'providers', { token: ADMIN });
    assert.deepEqual(
      providers.body.data.map((p: Record<string, unknown>) => [p.id, p.managed_by]),
      [
        ['east', 'database'],
        ['west', 'database'],
      ],
    );
    assert.deepEqual(providers.body.data[0].api_key, { env: 'EAST_KEY' });
    // The database owns it now: the route and the provider go.
    assert.equal((await v1(admin, 'DELETE', 'routes/w', { token: ADMIN })).status, 204);
    const gone = await v1(admin, 'DELETE', 'providers/west', { token: ADMIN });
    assert.equal(gone.status, 204, gone.text);
    assert.equal(await status(gw, 'w'), 404);
    await gw.stop();

    const second = await runCli(['db', 'seed', '--config', path], ENV);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /already seeded at .*: nothing changed/);
    const again = await resources.startGw(config(db.url, 'database'), { env: ENV });
    try {
      assert.equal(await status(again, 'w'), 404, 'the deleted route did not come back from the file');
      assert.equal((await v1(again.adminUrl as string, 'GET', 'providers/west', { token: ADMIN })).status, 404);
      assert.equal(await status(again, 'm'), 200);
    } finally {
      await again.stop();
    }
  });

  it('refuses a seed without a database, and a config that does not validate', async () => {
    const noDb = writeConfig(dir, 'no-db.yaml', config(null, 'merged'));
    const refused = await runCli(['db', 'seed', '--config', noDb], ENV);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /database/);
    const bad = writeConfig(dir, 'bad.yaml', { ...config(db.url, 'database'), providers: { east: { type: 'openai' } } });
    const invalid = await runCli(['db', 'seed', '--config', bad], ENV);
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /providers\.east\.base_url/);
  });
});

describe('the export', () => {
  let db: TestDatabase;
  let gw: GatewayProcess;

  before(async () => {
    db = sqliteDatabase();
    gw = await resources.startGw(config(db.url, 'merged'), { env: ENV });
  });
  after(async () => {
    await gw.stop();
    await db.drop();
  });

  it('prints the same YAML from the admin API and the CLI, which validate accepts and which serves the same topology (one digest) without the database', async () => {
    const admin = gw.adminUrl as string;
    const north = { id: 'north', type: 'openai', base_url: west.baseUrl, timeout_ms: 5000, expose_headers: ['x-mock-provider'] };
    assert.equal((await v1(admin, 'POST', 'providers', { token: ADMIN, body: north })).status, 201);
    assert.equal((await v1(admin, 'POST', 'routes', { token: ADMIN, body: { id: 'n', candidates: [{ provider: 'north' }] } })).status, 201);
    assert.equal(
      (await v1(admin, 'POST', 'pricing', { token: ADMIN, body: { model: 'n', input_usd_per_mtok: 3, output_usd_per_mtok: 4 } })).status,
      201,
    );
    const api = await fetch(`${admin}/admin/v1/config/export`, { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(api.status, 200);
    assert.match(api.headers.get('content-type') ?? '', /yaml/);
    const text = await api.text();
    const cli = await runCli(['config', 'export', '--config', gw.configPath], ENV);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(cli.stdout, text);
    assert.match(text, /north:/);
    assert.ok(!text.includes(ENV.EAST_KEY), 'references stay references');

    // Reviewed in Git, then served without the database: the same routes and prices.
    const dir = resources.tempDir();
    const exported = join(dir, 'exported.yaml');
    const { parse } = await import('yaml');
    const document = parse(text) as Record<string, unknown>;
    delete document.database;
    writeFileSync(exported, stringify(document));
    const validated = await runCli(['validate', '--config', exported], ENV);
    assert.equal(validated.code, 0, validated.stderr + validated.stdout);
    const plain = await resources.startGw(document, { env: ENV });
    try {
      const served = await postChat(plain.url, chatBody('n'));
      assert.equal(served.status, 200);
      assert.equal(served.headers.get('x-mock-provider'), 'west');
      assert.ok(Number(served.headers.get('x-switchyard-cost-usd')) > 0);
      const models = async (g: GatewayProcess): Promise<string[]> =>
        ((await (await fetch(`${g.url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id).sort();
      assert.deepEqual(await models(plain), await models(gw));
      // The same topology, whichever source it came from: one digest.
      const original = await postChat(gw.url, chatBody('n'));
      assert.match(original.headers.get('x-switchyard-topology') ?? '', /^[0-9a-f]{64}$/);
      assert.equal(served.headers.get('x-switchyard-topology'), original.headers.get('x-switchyard-topology'));
    } finally {
      await plain.stop();
    }
  });
});
