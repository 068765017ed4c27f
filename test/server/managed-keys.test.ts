import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MockProvider } from '../../src/mock/index.js';
import { adminStatusBody } from '../support/admin.js';
import { postgresDatabase, sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { keyStatus, untilKeyStatus, v1 } from '../support/managed.js';
import { fileResources } from '../support/resources.js';

// Managed teams and keys through the admin API of real gateway processes, over a real
// SQLite file and the machine's PostgreSQL: every verb and its refusals, writes applied by
// a reload with trigger `database`, scoped tokens, rotation, and two replicas that learn of
// each other's writes.

const resources = fileResources('switchyard-managed-');
const ADMIN = 'admin-token-for-the-managed-tests';
const READER = 'read-only-token-for-the-managed-tests';
const GROWTH = 'growth-team-token-for-the-managed-tests';
const FILE_KEY = 'sy-the-config-file-key-of-team-platform';
const TOKEN_ENV = { ADMIN_TOKEN: ADMIN, READER_TOKEN: READER, GROWTH_TOKEN: GROWTH, FILE_KEY };

let east: MockProvider;
before(async () => {
  east = await resources.startMock({ name: 'east' });
});

function gatewayConfig(databaseUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return baseConfig(
    { east: east.baseUrl },
    { m: { candidates: [{ provider: 'east' }] } },
    {
      server: {
        admin_token: { env: 'ADMIN_TOKEN' },
        admin_tokens: [
          { id: 'reader', token: { env: 'READER_TOKEN' }, role: 'read_only' },
          { id: 'growth-bot', token: { env: 'GROWTH_TOKEN' }, role: 'team:growth' },
        ],
      },
      teams: { platform: { rate_limit: { rpm: 1000 } } },
      keys: [{ id: 'platform-ci', team: 'platform', key: { env: 'FILE_KEY' } }],
      database: { url: databaseUrl, recheck_ms: 500 },
      ...extra,
    },
  );
}

async function chatWith(gw: GatewayProcess, key: string): Promise<number> {
  return (await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${key}` })).status;
}

describe('managed teams and keys on SQLite', () => {
  let db: TestDatabase;
  let gw: GatewayProcess;
  let admin: string;

  before(async () => {
    db = sqliteDatabase();
    const dir = resources.tempDir();
    gw = await resources.startGw(gatewayConfig(db.url, { audit: { file: join(dir, 'audit.jsonl') } }), { dir, env: TOKEN_ENV });
    admin = gw.adminUrl as string;
  });
  after(async () => {
    await gw.stop();
    await db.drop();
  });

  it('creates a team and a key whose secret is shown once and authenticates at once, and lists both beside the config file entries', async () => {
    const team = await v1(admin, 'POST', 'teams', {
      token: ADMIN,
      body: { id: 'growth', rate_limit: { rpm: 100 }, allowed_models: ['m*'], metadata: { owner: 'growth@example.com' } },
    });
    assert.equal(team.status, 201, team.text);
    assert.equal(team.headers.get('etag'), '"1"');
    assert.equal(team.headers.get('x-switchyard-reload'), 'applied');
    assert.deepEqual(team.body.rate_limit, { rpm: 100 });
    assert.equal(team.body.managed_by, 'database');

    const created = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { id: 'growth-web', team: 'growth', rpm: 50 } });
    assert.equal(created.status, 201, created.text);
    const secret = created.body.key as string;
    assert.match(secret, /^sy-[A-Za-z0-9_-]{43}$/);
    assert.equal(created.body.prefix, secret.slice(0, 10));
    assert.equal(await chatWith(gw, secret), 200, 'the new key works when its creation has answered');

    const read = await v1(admin, 'GET', 'keys/growth-web', { token: ADMIN });
    assert.equal(read.status, 200);
    assert.equal(read.body.key, undefined, 'the secret is never shown again');
    assert.equal(read.text.includes(secret), false);
    assert.equal(read.body.rpm, 50);

    const teams = await v1(admin, 'GET', 'teams', { token: ADMIN });
    assert.deepEqual(
      teams.body.data.map((t: { id: string; managed_by: string }) => [t.id, t.managed_by]),
      [
        ['growth', 'database'],
        ['platform', 'config'],
      ],
    );
    const keys = await v1(admin, 'GET', 'keys?limit=1', { token: ADMIN });
    assert.equal(keys.body.data.length, 1);
    assert.equal(keys.body.next, 'growth-web');
    const rest = await v1(admin, 'GET', `keys?limit=1&after=${keys.body.next}`, { token: ADMIN });
    assert.deepEqual(
      rest.body.data.map((k: { id: string }) => k.id),
      ['platform-ci'],
    );
    assert.equal(rest.body.next, null);
    assert.equal(await chatWith(gw, FILE_KEY), 200, 'the config file key still works');
  });

  it('refuses a body the config schema refuses, naming each field, and commits nothing', async () => {
    const bad = await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'broken', rate_limit: { rpm: -1 }, colour: 'red' } });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.error.code, 'invalid_request');
    assert.deepEqual(bad.body.error.errors.map((e: { path: string }) => e.path).sort(), ['colour']);
    const badLimit = await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'broken', rate_limit: { rpm: -1 } } });
    assert.equal(badLimit.status, 400);
    assert.deepEqual(
      badLimit.body.error.errors.map((e: { path: string }) => e.path),
      ['rate_limit.rpm'],
    );
    assert.equal((await v1(admin, 'GET', 'teams/broken', { token: ADMIN })).status, 404, 'nothing was committed');
    const orphan = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'nobody' } });
    assert.equal(orphan.status, 400);
    assert.deepEqual(orphan.body.error.errors, [{ path: 'team', message: 'unknown team "nobody"' }]);
    const expiry = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'growth', expires_at: 'tomorrow' } });
    assert.equal(expiry.status, 400);
    assert.equal(expiry.body.error.errors[0].path, 'expires_at');
  });

  it('keeps the config file read-only (409), refuses a stale ETag (412) and a team that still has keys (409)', async () => {
    const fileTeam = await v1(admin, 'PATCH', 'teams/platform', { token: ADMIN, body: { rate_limit: { rpm: 1 } } });
    assert.equal(fileTeam.status, 409);
    assert.equal(fileTeam.body.error.code, 'managed_by_config');
    assert.equal((await v1(admin, 'POST', 'keys/platform-ci/revoke', { token: ADMIN })).body.error.code, 'managed_by_config');
    assert.equal((await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'platform' } })).status, 409);

    const current = await v1(admin, 'GET', 'teams/growth', { token: ADMIN });
    const etag = current.headers.get('etag') as string;
    const first = await v1(admin, 'PATCH', 'teams/growth', { token: ADMIN, ifMatch: etag, body: { quota: { tokens_per_day: 1_000_000 } } });
    assert.equal(first.status, 200, first.text);
    assert.notEqual(first.headers.get('etag'), etag);
    assert.deepEqual(first.body.rate_limit, { rpm: 100 }, 'a patch keeps the fields it does not name');
    const stale = await v1(admin, 'PATCH', 'teams/growth', { token: ADMIN, ifMatch: etag, body: { quota: null } });
    assert.equal(stale.status, 412);
    assert.deepEqual((await v1(admin, 'GET', 'teams/growth', { token: ADMIN })).body.quota, { tokens_per_day: 1_000_000 });

    const busy = await v1(admin, 'DELETE', 'teams/growth', { token: ADMIN });
    assert.equal(busy.status, 409);
    assert.match(busy.body.error.message, /still has 1 key/);
    assert.equal((await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'empty' } })).status, 201);
    assert.equal((await v1(admin, 'DELETE', 'teams/empty', { token: ADMIN })).status, 204);
    assert.equal((await v1(admin, 'GET', 'teams/empty', { token: ADMIN })).status, 404);
  });

  it('gives a team token its own team only, and a read-only token reads but never writes', async () => {
    const own = await v1(admin, 'POST', 'keys', { token: GROWTH, body: { team: 'growth', metadata: { app: 'batch' } } });
    assert.equal(own.status, 201, own.text);
    assert.match(own.body.id, /^key-[0-9a-f]{12}$/);
    const elsewhere = await v1(admin, 'POST', 'keys', { token: GROWTH, body: { team: 'platform' } });
    assert.equal(elsewhere.status, 403);
    assert.equal(elsewhere.body.error.code, 'forbidden');
    assert.equal((await v1(admin, 'GET', 'keys/platform-ci', { token: GROWTH })).status, 404, "another team's key is not there to it");
    assert.equal((await v1(admin, 'POST', 'teams', { token: GROWTH, body: { id: 'mine' } })).status, 403);
    const listed = await v1(admin, 'GET', 'keys', { token: GROWTH });
    assert.ok(listed.body.data.length >= 2);
    assert.ok(listed.body.data.every((k: { team: string }) => k.team === 'growth'));
    assert.equal((await v1(admin, 'GET', 'keys?team=platform', { token: GROWTH })).status, 403);
    assert.equal((await fetch(`${admin}/admin/status`, { headers: { authorization: `Bearer ${GROWTH}` } })).status, 403);

    assert.equal((await v1(admin, 'GET', 'keys', { token: READER })).status, 200);
    assert.equal((await v1(admin, 'POST', 'keys', { token: READER, body: { team: 'growth' } })).status, 403);
    assert.equal((await fetch(`${admin}/admin/status`, { headers: { authorization: `Bearer ${READER}` } })).status, 200);
    assert.equal((await fetch(`${admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${READER}` } })).status, 403);
    assert.equal((await v1(admin, 'GET', 'keys')).status, 401, 'no token, no answer');
  });

  it('lets a team token tighten the limits of its key but not raise or remove one (403 naming the field, nothing stored)', async () => {
    const made = await v1(admin, 'POST', 'keys', {
      token: ADMIN,
      body: { id: 'capped', team: 'growth', rpm: 10, allowed_models: ['m', 'n'], expires_at: '2030-01-01T00:00:00Z' },
    });
    assert.equal(made.status, 201, made.text);
    const loosen: Array<[Record<string, unknown>, string]> = [
      [{ rpm: null }, 'rpm'],
      [{ rpm: 11 }, 'rpm'],
      [{ allowed_models: null }, 'allowed_models'],
      [{ allowed_models: ['m*'] }, 'allowed_models'],
      [{ expires_at: null }, 'expires_at'],
      [{ expires_at: '2031-01-01T00:00:00Z' }, 'expires_at'],
    ];
    for (const [body, field] of loosen) {
      const refused = await v1(admin, 'PATCH', 'keys/capped', { token: GROWTH, body });
      assert.equal(refused.status, 403, `${JSON.stringify(body)}: ${refused.text}`);
      assert.equal(refused.body.error.code, 'forbidden');
      assert.equal(refused.body.error.param, field);
      assert.deepEqual(
        refused.body.error.errors.map((e: { path: string }) => e.path),
        [field],
      );
    }
    const unchanged = await v1(admin, 'GET', 'keys/capped', { token: ADMIN });
    assert.equal(unchanged.body.version, 1, 'no refused change was stored');
    assert.equal(unchanged.body.rpm, 10);

    const tightened = await v1(admin, 'PATCH', 'keys/capped', {
      token: GROWTH,
      body: { rpm: 5, tpm: 5000, allowed_models: ['m'], expires_at: '2029-01-01T00:00:00Z' },
    });
    assert.equal(tightened.status, 200, tightened.text);
    assert.equal(tightened.body.rpm, 5);
    assert.deepEqual(tightened.body.allowed_models, ['m']);
    const lifted = await v1(admin, 'PATCH', 'keys/capped', { token: ADMIN, body: { rpm: null, allowed_models: null } });
    assert.equal(lifted.status, 200, 'an admin token may lift a limit');
    assert.equal(lifted.body.rpm, undefined);
  });

  it("answers a team token the same 404 for another team's key, managed or from the file, and for a key that does not exist", async () => {
    const theirs = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { id: 'platform-managed', team: 'platform', rpm: 10 } });
    assert.equal(theirs.status, 201, theirs.text);
    const calls: Array<[string, string, unknown]> = [
      ['GET', '', undefined],
      ['PATCH', '', { rpm: 1 }],
      ['POST', '/revoke', undefined],
      ['POST', '/rotate', {}],
    ];
    for (const [method, action, body] of calls) {
      for (const id of ['platform-managed', 'platform-ci', 'no-such-key']) {
        const reply = await v1(admin, method, `keys/${id}${action}`, { token: GROWTH, body });
        assert.equal(reply.status, 404, `${method} keys/${id}${action}: ${reply.text}`);
        assert.deepEqual(
          { code: reply.body.error.code, message: reply.body.error.message },
          { code: 'not_found', message: `no key "${id}"` },
          `${method} keys/${id}${action}`,
        );
      }
    }
    const after = await v1(admin, 'GET', 'keys/platform-managed', { token: ADMIN });
    assert.equal(after.body.version, 1);
    assert.equal(after.body.revoked_at, null);
    assert.equal(await chatWith(gw, FILE_KEY), 200);
    const fileKey = await v1(admin, 'GET', 'keys/platform-ci', { token: ADMIN });
    assert.equal(fileKey.body.revoked_at, null, 'a config file key is not revoked');
    assert.ok(!Number.isNaN(Date.parse(fileKey.body.last_used_at)), `its last use is shown: ${fileKey.text}`);
    const listed = await v1(admin, 'GET', 'keys', { token: ADMIN });
    const row = listed.body.data.find((k: { id: string }) => k.id === 'platform-ci');
    assert.equal(row.revoked_at, null);
    assert.equal(row.last_used_at, fileKey.body.last_used_at);
  });

  it('revokes a key at once, and rotates one with a grace period in which both secrets work', async () => {
    const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'growth' } });
    const secret = made.body.key as string;
    assert.equal(await chatWith(gw, secret), 200);
    const revoked = await v1(admin, 'POST', `keys/${made.body.id}/revoke`, { token: ADMIN });
    assert.equal(revoked.status, 200, revoked.text);
    assert.ok(revoked.body.revoked_at);
    assert.equal(await chatWith(gw, secret), 401, 'a revoked key stops when the revoke has answered');
    assert.equal((await v1(admin, 'POST', `keys/${made.body.id}/revoke`, { token: ADMIN })).status, 200, 'a second revoke changes nothing');
    assert.equal((await v1(admin, 'POST', `keys/${made.body.id}/rotate`, { token: ADMIN })).status, 409);

    const rotating = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'growth' } });
    const old = rotating.body.key as string;
    const rotated = await v1(admin, 'POST', `keys/${rotating.body.id}/rotate`, { token: ADMIN, body: { grace_s: 2 } });
    assert.equal(rotated.status, 200, rotated.text);
    const fresh = rotated.body.key as string;
    assert.notEqual(fresh, old);
    assert.ok(rotated.body.previous_secret_valid_until);
    assert.equal(await chatWith(gw, fresh), 200);
    assert.equal(await chatWith(gw, old), 200, 'the old secret works during the grace');
    await untilKeyStatus(gw.url, old, 401, 10_000);
    assert.equal(await chatWith(gw, fresh), 200);

    const immediate = await v1(admin, 'POST', `keys/${rotating.body.id}/rotate`, { token: ADMIN, body: {} });
    assert.equal(await keyStatus(gw.url, fresh), 401, 'without a grace the replaced secret stops at once');
    assert.equal(await keyStatus(gw.url, immediate.body.key), 200);
    assert.equal((await v1(admin, 'POST', `keys/${rotating.body.id}/rotate`, { token: ADMIN, body: { grace_s: -1 } })).status, 400);
  });

  it('shows every write as a reload with trigger database, and as an audit record naming the token, without a secret', async () => {
    const status = await adminStatusBody(gw, ADMIN);
    assert.ok(status.reloads.some((r) => r.trigger === 'database' && r.result === 'applied'));
    const named = (list: string) =>
      status.reloads.filter((r) => r.trigger === 'database').flatMap((r) => ((r.changes ?? {}) as Record<string, string[]>)[list] ?? []);
    assert.ok(named('teamsAdded').includes('growth'), 'the reload history names the team a write added');
    assert.ok(named('keysAdded').length > 0 && named('keysChanged').length > 0, 'and the keys it added and changed (a rotation)');
    assert.equal(JSON.stringify(status.reloads).includes('sy-'), false, 'by id: no secret in the reload history');
    const metrics = await (await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    assert.match(metrics, /switchyard_reload_total\{trigger="database",result="applied"\} [1-9]/);
    const audit = readFileSync(join(gw.dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const writes = audit.filter((r) => r.event === 'admin_write');
    assert.ok(writes.some((w) => w.token === 'admin' && w.object === 'team' && w.action === 'create' && w.object_id === 'growth'));
    assert.ok(writes.some((w) => w.token === 'growth-bot' && w.object === 'key' && w.action === 'create'));
    assert.ok(writes.some((w) => w.action === 'rotate'));
    assert.equal(/"key":"sy-/.test(readFileSync(join(gw.dir, 'audit.jsonl'), 'utf8')), false, 'no secret in the audit log');
    assert.equal(
      gw.output.some((line) => /sy-[A-Za-z0-9_-]{43}/.test(line)),
      false,
      'no secret in the logs',
    );
  });
});

describe('an open gateway and its first managed key', () => {
  it('says in the write answer, the reload result, a warning line and the page data that the first key closes the gateway, and that revoking the last opens it', async () => {
    const db = sqliteDatabase();
    try {
      const gw = await resources.startGw(
        baseConfig(
          { east: east.baseUrl },
          { m: { candidates: [{ provider: 'east' }] } },
          { server: { admin_token: { env: 'ADMIN_TOKEN' } }, database: { url: db.url } },
        ),
        { env: TOKEN_ENV },
      );
      const admin = gw.adminUrl as string;
      const pageData = async () =>
        (await (await fetch(`${admin}/admin/status/page-data`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as {
          access: { open: boolean; keys: number; issuers: string[]; mode: string | null };
        };
      assert.equal((await postChat(gw.url, chatBody('m'))).status, 200, 'open: served without a key');
      assert.deepEqual((await pageData()).access, { open: true, keys: 0, issuers: [], mode: null });

      const team = await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'growth' } });
      assert.deepEqual(team.body.warnings, [], 'a write that changes no access warns of nothing');
      const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { id: 'first', team: 'growth' } });
      assert.equal(made.status, 201, made.text);
      const closing = (made.body.warnings as string[]).find((w) => /was open and now requires an API key/.test(w));
      assert.ok(closing, `the answer warns: ${made.text}`);
      assert.match(closing, /key first/);
      assert.match(closing, /401/);
      assert.equal((await postChat(gw.url, chatBody('m'))).status, 401, 'closed: a request without a key is refused');
      assert.equal(await chatWith(gw, made.body.key), 200);

      const status = await adminStatusBody(gw, ADMIN);
      assert.ok(
        status.reloads.some((r) => r.trigger === 'database' && r.warnings.some((w) => w === closing)),
        'the reload result says so',
      );
      const line = await gw.waitForLog((l) => l.msg === 'access changed');
      assert.equal(line.level, 'warn');
      assert.equal(line.change, closing);
      assert.deepEqual((await pageData()).access, { open: false, keys: 1, issuers: [], mode: null });

      const revoked = await v1(admin, 'POST', 'keys/first/revoke', { token: ADMIN });
      assert.ok(
        (revoked.body.warnings as string[]).some((w) => /the gateway is now open/.test(w)),
        `revoking the last key warns: ${revoked.text}`,
      );
      assert.equal((await postChat(gw.url, chatBody('m'))).status, 200);
      assert.deepEqual((await pageData()).access, { open: true, keys: 0, issuers: [], mode: null });
      await gw.stop();
    } finally {
      await db.drop();
    }
  });
});

describe('managed keys on PostgreSQL, shared by two replicas', () => {
  it('a key created on one replica authenticates on the other, and stops there after a revoke; counters survive the reloads', async (t) => {
    const db = await postgresDatabase();
    if ('skip' in db) return t.skip(db.skip);
    try {
      const a = await resources.startGw(gatewayConfig(db.url), { env: TOKEN_ENV });
      const b = await resources.startGw(gatewayConfig(db.url), { env: TOKEN_ENV });
      await v1(a.adminUrl as string, 'POST', 'teams', { token: ADMIN, body: { id: 'growth' } });
      const made = await v1(a.adminUrl as string, 'POST', 'keys', { token: ADMIN, body: { team: 'growth', rpm: 3 } });
      assert.equal(made.status, 201, made.text);
      const secret = made.body.key as string;
      const learnt = await untilKeyStatus(b.url, secret, 200, 10_000);
      t.diagnostic(`the other replica authenticated the new key after ${Math.round(learnt)} ms`);

      // rpm 3 over both replicas? No: each replica counts in its own memory store. On one replica,
      // the key's window survives the reloads that other writes cause.
      assert.equal(await chatWith(b, secret), 200);
      assert.equal(await chatWith(b, secret), 200);
      await v1(a.adminUrl as string, 'POST', 'keys', { token: ADMIN, body: { team: 'growth' } });
      await sleep(200);
      const seenVersion = async () => (await adminStatusBody(b, ADMIN)).reloads.filter((r) => r.trigger === 'database').length;
      for (let i = 0; i < 100 && (await seenVersion()) < 2; i++) await sleep(50);
      assert.equal(await chatWith(b, secret), 200);
      assert.equal(await chatWith(b, secret), 429, 'the fourth request in the minute is over rpm 3, across the reloads');

      const revoked = await v1(a.adminUrl as string, 'POST', `keys/${made.body.id}/revoke`, { token: ADMIN });
      assert.equal(revoked.status, 200);
      const stopped = await untilKeyStatus(b.url, secret, 401, 10_000);
      t.diagnostic(`the other replica refused the revoked key after ${Math.round(stopped)} ms`);
      await a.stop();
      await b.stop();
    } finally {
      await db.drop();
    }
  });
});

describe('the database at start-up and while it is away', () => {
  it('a gateway refuses to start against a schema newer than it knows, and says so', async () => {
    const db = sqliteDatabase();
    try {
      const first = await resources.startGw(gatewayConfig(db.url), { env: TOKEN_ENV });
      await first.stop();
      const { openDatabase, SCHEMA_VERSION } = await import('../../src/database/index.js');
      const database = openDatabase({ url: db.url });
      await database.db
        .insertInto('schema_version')
        .values({ version: SCHEMA_VERSION + 1, name: 'from a newer gateway', applied_at: new Date().toISOString() })
        .execute();
      await database.close();
      const { runCli } = await import('../support/gateway-process.js');
      const dir = resources.tempDir();
      const configPath = join(dir, 'gateway.yaml');
      const { writeFileSync } = await import('node:fs');
      const { stringify } = await import('yaml');
      writeFileSync(configPath, stringify(gatewayConfig(db.url)));
      const refused = await runCli(['serve', '--config', configPath], TOKEN_ENV);
      assert.equal(refused.code, 1);
      assert.match(
        refused.stdout + refused.stderr,
        new RegExp(`database: .*schema is version ${SCHEMA_VERSION + 1}, newer than this gateway knows \\(${SCHEMA_VERSION}\\)`),
      );
    } finally {
      await db.drop();
    }
  });

  it('writes when each key was last used, off the request path (at the latest when the gateway stops)', async () => {
    const db = sqliteDatabase();
    try {
      const gw = await resources.startGw(gatewayConfig(db.url), { env: TOKEN_ENV });
      await v1(gw.adminUrl as string, 'POST', 'teams', { token: ADMIN, body: { id: 'growth' } });
      const made = await v1(gw.adminUrl as string, 'POST', 'keys', { token: ADMIN, body: { id: 'used', team: 'growth' } });
      await v1(gw.adminUrl as string, 'POST', 'keys', { token: ADMIN, body: { id: 'unused', team: 'growth' } });
      const before = Date.now();
      assert.equal(await chatWith(gw, made.body.key), 200);
      assert.equal(
        (await v1(gw.adminUrl as string, 'GET', 'keys/used', { token: ADMIN })).body.last_used_at,
        null,
        'not written on the request path',
      );
      await gw.stop();
      const { openDatabase, ManagedRecords } = await import('../../src/database/index.js');
      const database = openDatabase({ url: db.url });
      const records = new ManagedRecords(database);
      const used = await records.key('used');
      const unused = await records.key('unused');
      await database.close();
      assert.ok(used?.lastUsedAt !== null && Date.parse(used?.lastUsedAt as string) >= before - 1000, String(used?.lastUsedAt));
      assert.equal(unused?.lastUsedAt, null);
    } finally {
      await db.drop();
    }
  });

  it('while another process holds the SQLite file locked, requests are served and ledgered later, and a write is 503 with nothing written', async () => {
    const db = sqliteDatabase();
    const BetterSqlite3 = (await import('better-sqlite3')).default;
    try {
      const gw = await resources.startGw(gatewayConfig(db.url), { env: TOKEN_ENV });
      const admin = gw.adminUrl as string;
      await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'growth' } });
      const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'growth' } });
      const other = new BetterSqlite3(db.url.slice('sqlite:'.length));
      try {
        other.exec('BEGIN IMMEDIATE');
        for (let i = 0; i < 5; i++) assert.equal(await chatWith(gw, made.body.key), 200, 'no database on the request path');
        const refused = await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'while-locked' } });
        assert.equal(refused.status, 503, refused.text);
        assert.equal(refused.body.error.code, 'database_unavailable');
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      assert.equal((await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'after' } })).status, 201);
      assert.equal((await v1(admin, 'GET', 'teams/while-locked', { token: ADMIN })).status, 404, 'the refused write left nothing');
      let rows = 0;
      for (let i = 0; i < 100 && rows < 5; i++) {
        const page = await v1(admin, 'GET', 'usage/requests?limit=100', { token: ADMIN });
        rows = (page.body.rows as unknown[]).length;
        if (rows < 5) await sleep(100);
      }
      assert.equal(rows, 5, 'the rows of the locked spell are written once the lock is gone');
      await gw.stop();
    } finally {
      await db.drop();
    }
  });

  it('while Postgres is away, requests keep their keys, a reload keeps the last teams and keys, and a write is 503 with nothing written', async (t) => {
    const db = await postgresDatabase();
    if ('skip' in db) return t.skip(db.skip);
    const name = new URL(db.url).pathname.slice(1);
    const pg = (await import('pg')).default;
    const { POSTGRES_ADMIN_URL } = await import('../support/databases.js');
    const control = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await control.connect();
    try {
      const gw = await resources.startGw(gatewayConfig(db.url), { env: TOKEN_ENV });
      const admin = gw.adminUrl as string;
      await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'growth' } });
      const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'growth' } });
      await control.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await control.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);

      assert.equal(await chatWith(gw, made.body.key), 200, 'the generation holds the keys: no database on the request path');
      const reload = await fetch(`${admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
      const result = (await reload.json()) as { result: string; warnings: string[] };
      assert.equal(result.result, 'applied');
      assert.ok(
        result.warnings.some((w) => /teams and keys could not be read .* those of version \d+ are kept/.test(w)),
        result.warnings.join('\n'),
      );
      assert.equal(await chatWith(gw, made.body.key), 200);
      const refused = await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'while-away' } });
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.body.error.code, 'database_unavailable');

      await control.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      let back = 0;
      for (let i = 0; i < 100 && back !== 201; i++) {
        back = (await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'after' } })).status;
        if (back !== 201) await sleep(100);
      }
      assert.equal(back, 201, 'writes work again once the database is back');
      assert.equal((await v1(admin, 'GET', 'teams/while-away', { token: ADMIN })).status, 404, 'the refused write left nothing');
      await gw.stop();
    } finally {
      await control.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => undefined);
      await control.end();
      await db.drop();
    }
  });
});
