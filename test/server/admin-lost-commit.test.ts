import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MockProvider } from '../../src/mock/index.js';
import { postgresDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { keyStatus, untilKeyStatus, v1 } from '../support/managed.js';
import { PgFaultProxy } from '../support/pg-fault-proxy.js';
import { fileResources } from '../support/resources.js';

// Admin writes whose COMMIT reached PostgreSQL but whose answer did not: a real gateway
// process talks to the database through a proxy that forwards the COMMIT, drops the answer
// and cuts the connection. The gateway asks the database again and answers what is true;
// when it cannot ask, it says the outcome is unknown. Every attempt is in the audit log.

const resources = fileResources('switchyard-admin-lost-commit-');
const ADMIN = 'admin-token-for-the-lost-commit-tests';

/** A transaction that writes the keys table. */
const writesKeys = (statements: readonly string[]): boolean => statements.some((s) => /^update "keys"/i.test(s.trim()));

describe('admin writes whose commit answer is lost, on PostgreSQL', () => {
  let east: MockProvider;
  let db: TestDatabase | null = null;
  let proxy: PgFaultProxy;
  let gw: GatewayProcess;
  let admin: string;
  let auditFile: string;
  let skip: string | null = null;

  before(async () => {
    const made = await postgresDatabase();
    if ('skip' in made) {
      skip = made.skip;
      return;
    }
    db = made;
    east = await resources.startMock({ name: 'east' });
    proxy = await PgFaultProxy.start(made.url);
    const dir = resources.tempDir();
    auditFile = join(dir, 'audit.jsonl');
    const config = baseConfig(
      { east: east.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      {
        server: { admin_token: { env: 'ADMIN_TOKEN' } },
        database: { url: proxy.via(made.url), recheck_ms: 500 },
        audit: { file: auditFile },
      },
    );
    gw = await resources.startGw(config, { dir, env: { ADMIN_TOKEN: ADMIN } });
    admin = gw.adminUrl as string;
    assert.equal((await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'growth' } })).status, 201);
  });
  after(async () => {
    await gw?.stop();
    await proxy?.close();
    await db?.drop();
  });

  const adminWrites = () =>
    readFileSync(auditFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.event === 'admin_write');

  /** The audit writer appends in the background: the first admin_write record that `pick` finds, waiting for it a little. */
  async function auditedWrite(pick: (w: Record<string, unknown>) => boolean): Promise<Record<string, unknown> | undefined> {
    for (let i = 0; i < 100; i++) {
      const found = adminWrites().find(pick);
      if (found !== undefined) return found;
      await sleep(50);
    }
    return undefined;
  }

  async function newKey(): Promise<{ id: string; key: string }> {
    const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'growth' } });
    assert.equal(made.status, 201, made.text);
    return { id: made.body.id as string, key: made.body.key as string };
  }

  it('a rotation the database committed answers 200 with the new secret, which authenticates, and is audited as applied', async (t) => {
    if (skip !== null) return t.skip(skip);
    const key = await newKey();
    const lost = proxy.loseCommitAnswer(writesKeys);
    const rotated = await v1(admin, 'POST', `keys/${key.id}/rotate`, { token: ADMIN, body: {} });
    await lost;
    assert.equal(rotated.status, 200, rotated.text);
    assert.match(rotated.body.key as string, /^sy-/);
    await untilKeyStatus(gw.url, rotated.body.key as string, 200, 10_000);
    assert.equal(await keyStatus(gw.url, key.key), 401, 'the replaced secret stopped');
    const record = await auditedWrite((w) => w.object_id === key.id && w.action === 'rotate');
    assert.equal(record?.outcome, 'applied');
    assert.equal(typeof record?.version, 'number');
  });

  it('a new key the database committed answers 201 with its secret, which authenticates, and is audited as applied', async (t) => {
    if (skip !== null) return t.skip(skip);
    const lost = proxy.loseCommitAnswer((statements) => statements.some((s) => /^insert into "keys"/i.test(s.trim())));
    const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { id: 'made-in-the-dark', team: 'growth' } });
    await lost;
    assert.equal(made.status, 201, made.text);
    await untilKeyStatus(gw.url, made.body.key as string, 200, 10_000);
    assert.equal((await auditedWrite((w) => w.object_id === 'made-in-the-dark' && w.action === 'create'))?.outcome, 'applied');
  });

  it('a revoke the database committed answers 200 revoked, not 503 "nothing was written"', async (t) => {
    if (skip !== null) return t.skip(skip);
    const key = await newKey();
    await untilKeyStatus(gw.url, key.key, 200, 10_000);
    const lost = proxy.loseCommitAnswer(writesKeys);
    const revoked = await v1(admin, 'POST', `keys/${key.id}/revoke`, { token: ADMIN });
    await lost;
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal(typeof revoked.body.revoked_at, 'string');
    await untilKeyStatus(gw.url, key.key, 401, 10_000);
    assert.equal((await auditedWrite((w) => w.object_id === key.id && w.action === 'revoke'))?.outcome, 'applied');
  });

  it('a write whose outcome the database cannot be asked about answers 503 outcome_unknown, and is audited as unknown', async (t) => {
    if (skip !== null) return t.skip(skip);
    const key = await newKey();
    const lost = proxy.loseCommitAnswer(writesKeys, { refuse: true });
    try {
      const patched = await v1(admin, 'PATCH', `keys/${key.id}`, { token: ADMIN, body: { rpm: 7 } });
      await lost;
      assert.equal(patched.status, 503, patched.text);
      assert.equal(patched.body.error?.code, 'outcome_unknown');
      assert.match(patched.body.error?.message as string, /may have taken effect/);
      assert.doesNotMatch(patched.text, /nothing was written/);
    } finally {
      proxy.accept();
    }
    const record = await auditedWrite((w) => w.object_id === key.id && w.action === 'update');
    assert.equal(record?.outcome, 'unknown');
    assert.equal(record?.reason, 'outcome_unknown');
    assert.deepEqual(record?.change, { rpm: 7 });
    // The database did commit it: once it answers again, a read says so.
    const read = await v1(admin, 'GET', `keys/${key.id}`, { token: ADMIN });
    assert.equal(read.body.rpm, 7);
  });

  it('a write refused after the token was authenticated is audited as refused, with its code', async (t) => {
    if (skip !== null) return t.skip(skip);
    const refused = await v1(admin, 'PATCH', 'keys/no-such-key', { token: ADMIN, body: { rpm: 1 } });
    assert.equal(refused.status, 404);
    const bad = await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'x', colour: 'red' } });
    assert.equal(bad.status, 400);
    const missing = await auditedWrite((w) => w.object_id === 'no-such-key');
    await auditedWrite((w) => w.object === 'team' && w.outcome === 'refused');
    const writes = adminWrites();
    assert.deepEqual([missing?.outcome, missing?.reason, missing?.action, missing?.version], ['refused', 'not_found', 'update', null]);
    assert.ok(
      writes.some((w) => w.object === 'team' && w.action === 'create' && w.outcome === 'refused' && w.reason === 'invalid_request'),
    );
    const unauthenticated = await v1(admin, 'POST', 'teams', { token: 'wrong', body: { id: 'y' } });
    assert.equal(unauthenticated.status, 401);
    await sleep(300);
    assert.equal(adminWrites().length, writes.length, 'a request whose token did not authenticate is no attempt');
  });
});
