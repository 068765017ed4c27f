import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { AuditWriter, verifyAuditFile } from '../../src/audit/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { sqliteDatabase } from '../support/databases.js';
import { baseConfig, runCli } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { fileResources } from '../support/resources.js';
import { AuditDir } from './fixture.js';

// Admin writes in the audit log: a real gateway process writes teams and keys through the
// admin API over a real SQLite file, and the real `audit verify` (dist/cli.js; build it
// first) reads the file it wrote.

const resources = fileResources('switchyard-admin-audit-');
const tmp = new AuditDir('switchyard-admin-audit-unit-');
const ADMIN = 'admin-token-for-the-admin-audit-tests';

let east: MockProvider;
before(async () => {
  east = await resources.startMock({ name: 'east' });
});

describe('admin writes in the audit log', () => {
  it('keep each record its own ULID id and name the object in object_id, so audit verify passes after teams and keys are written', async () => {
    const db = sqliteDatabase();
    const dir = resources.tempDir();
    const file = join(dir, 'audit.jsonl');
    const config = baseConfig(
      { east: east.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      { server: { admin_token: { env: 'ADMIN_TOKEN' } }, database: { url: db.url }, audit: { file } },
    );
    const gw = await resources.startGw(config, { dir, env: { ADMIN_TOKEN: ADMIN } });
    try {
      const admin = gw.adminUrl as string;
      assert.equal((await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'growth' } })).status, 201);
      assert.equal((await v1(admin, 'PATCH', 'teams/growth', { token: ADMIN, body: { rate_limit: { rpm: 50 } } })).status, 200);
      const key = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'growth' } });
      assert.equal(key.status, 201, key.text);
      const keyId = key.body.id as string;
      assert.equal((await v1(admin, 'PATCH', `keys/${keyId}`, { token: ADMIN, body: { rpm: 10 } })).status, 200);
      assert.equal((await v1(admin, 'POST', `keys/${keyId}/rotate`, { token: ADMIN, body: {} })).status, 200);
      assert.equal((await v1(admin, 'POST', `keys/${keyId}/revoke`, { token: ADMIN })).status, 200);
    } finally {
      await gw.stop();
      await db.drop();
    }

    const r = await runCli(['audit', 'verify', file]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /chain intact/);

    const records = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(new Set(records.map((x) => x.id)).size, records.length, 'every record has its own id');
    for (const x of records) assert.match(x.id as string, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    const writes = records.filter((x) => x.event === 'admin_write');
    assert.deepEqual(
      writes.map((w) => `${w.object}:${w.action}`),
      ['team:create', 'team:update', 'key:create', 'key:update', 'key:rotate', 'key:revoke'],
    );
    assert.deepEqual(
      writes.slice(0, 2).map((w) => w.object_id),
      ['growth', 'growth'],
    );
    const keyWrites = writes.slice(2);
    assert.equal(new Set(keyWrites.map((w) => w.object_id)).size, 1, "the key's four writes name one object");
    assert.equal(new Set(keyWrites.map((w) => w.id)).size, 4, 'and are four records');
  });
});

describe('audit writer', () => {
  it("never lets an event's field replace the record's own id, ts, instance, seq or prev_hash", async () => {
    const path = tmp.fresh();
    const w = await AuditWriter.open({ path, instance: 'test-1', clock: () => Date.UTC(2026, 10, 30, 12) });
    w.append({ event: 'reload', id: 'not-a-ulid', ts: 'then', instance: 'other', seq: 99, prev_hash: 'f'.repeat(64) });
    w.append({ event: 'reload', id: 'not-a-ulid' });
    await w.close();
    const [first, second] = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.match(first?.id as string, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(first?.ts, '2026-11-30T12:00:00.000Z');
    assert.equal(first?.instance, 'test-1');
    assert.deepEqual([first?.seq, second?.seq], [1, 2]);
    assert.notEqual(first?.id, second?.id);
    assert.equal((await verifyAuditFile(path)).ok, true);
  });
});
