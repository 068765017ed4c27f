import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { sqliteDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { waitUntil } from '../support/observe.js';
import { type LocalOidcProvider, startOidcProvider } from '../support/oidc.js';
import { fileResources } from '../support/resources.js';

// The admin listener with a token from a real OpenID provider in place of an admin token: the
// roles claim maps to admin, read_only or team:<id>, each with exactly the powers of the
// matching admin token, and the audit record of a write names the signed-in principal.

const resources = fileResources('switchyard-jwt-admin-');

let op: LocalOidcProvider;
let gw: GatewayProcess;
let admin: string;

describe('the admin API with a signed-in principal', () => {
  before(async () => {
    op = await startOidcProvider({
      clients: [
        { id: 'root', claims: { roles: ['switchyard-admin'] } },
        { id: 'viewer', claims: { roles: ['switchyard-viewer'] } },
        { id: 'acme-bot', claims: { roles: ['acme-ops'] } },
        { id: 'nobody', claims: { roles: ['unrelated'] } },
      ],
    });
    resources.addUpstream(() => op.stop());
    const east = await resources.startMock({ name: 'east' });
    const db = sqliteDatabase();
    resources.addGateway(() => db.drop());
    const dir = resources.tempDir();
    gw = await resources.startGw(
      baseConfig(
        { east: east.baseUrl },
        { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] } },
        {
          // An admin token of its own closes the admin listener to callers with no credential.
          server: { admin_token: { env: 'ADMIN_TOKEN' } },
          teams: { platform: {}, acme: {} },
          database: { url: db.url },
          audit: { file: join(dir, 'audit.jsonl') },
          auth: {
            jwt: {
              issuers: [
                {
                  id: 'corp',
                  issuer: op.issuer,
                  audiences: ['switchyard'],
                  jwks: { url: op.jwksUri },
                  roles: {
                    claim: 'roles',
                    map: { 'switchyard-admin': 'admin', 'switchyard-viewer': 'read_only', 'acme-ops': 'team:acme' },
                  },
                },
              ],
            },
          },
        },
      ),
      { dir, env: { ADMIN_TOKEN: 'admin-token-for-the-jwt-admin-tests' } },
    );
    admin = gw.adminUrl as string;
  });

  it('a read_only principal reads everything and writes nothing', async () => {
    const token = await op.token('viewer');
    const teams = await v1(admin, 'GET', 'teams', { token });
    assert.equal(teams.status, 200, teams.text);
    const write = await v1(admin, 'POST', 'teams', { token, body: { id: 'viewer-made' } });
    assert.equal(write.status, 403, write.text);
  });

  it("a team:<id> principal writes its team's keys only", async () => {
    const token = await op.token('acme-bot');
    const own = await v1(admin, 'POST', 'keys', { token, body: { team: 'acme' } });
    assert.equal(own.status, 201, own.text);
    const other = await v1(admin, 'POST', 'keys', { token, body: { team: 'platform' } });
    assert.equal(other.status, 403, other.text);
  });

  it('an admin principal writes, and the audit record of the write names the principal', async () => {
    const token = await op.token('root');
    const created = await v1(admin, 'POST', 'teams', { token, body: { id: 'growth' } });
    assert.equal(created.status, 201, created.text);
    const records = (): Array<Record<string, unknown>> =>
      readFileSync(join(gw.dir, 'audit.jsonl'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const isTheWrite = (r: Record<string, unknown>): boolean =>
      r.event === 'admin_write' && r.object === 'team' && r.object_id === 'growth';
    // The audit writer appends after the answer: wait for the line, not for a time.
    await waitUntil(
      () => records().some(isTheWrite),
      `the write is audited: ${JSON.stringify(records().filter((r) => r.event === 'admin_write'))}`,
    );
    const audit = records();
    const write = audit.find(isTheWrite)!;
    assert.equal(write.token, 'jwt:corp:root');
    assert.equal(write.outcome, 'applied');
    assert.ok(!JSON.stringify(audit).includes(token.split('.')[2]!), 'no token in the audit log');
  });

  it('a principal whose roles map to nothing, and an expired token, are refused', async () => {
    const none = await v1(admin, 'GET', 'teams', { token: await op.token('nobody') });
    assert.equal(none.status, 403, none.text);
    assert.equal(none.body.error.code, 'forbidden');
    const expired = await v1(admin, 'GET', 'teams', { token: await op.hostile.expired('root') });
    assert.equal(expired.status, 401, expired.text);
  });

  it('GET /admin/v1/me names the principal and the role its token was given', async () => {
    const me = await v1(admin, 'GET', 'me', { token: await op.token('viewer') });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.id, 'jwt:corp:viewer');
    assert.equal(me.body.role, 'read_only');
  });
});

describe('an admin listener with no admin token, beside an issuer with a roles mapping', () => {
  it('is closed: a call with no credential is a 401, and a token with a role is served', async () => {
    const east = await resources.startMock({ name: 'east' });
    const gw = await resources.startGw(
      baseConfig(
        { east: east.baseUrl },
        { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] } },
        {
          teams: { platform: {} },
          auth: {
            jwt: {
              issuers: [
                {
                  id: 'corp',
                  issuer: op.issuer,
                  audiences: ['switchyard'],
                  jwks: { url: op.jwksUri },
                  roles: { claim: 'roles', map: { 'switchyard-viewer': 'read_only' } },
                },
              ],
            },
          },
        },
      ),
    );
    const url = gw.adminUrl as string;
    const anonymous = await v1(url, 'GET', 'teams');
    assert.equal(anonymous.status, 401, anonymous.text);
    const status = await fetch(`${url}/admin/status`);
    await status.arrayBuffer();
    assert.equal(status.status, 401, 'the status endpoint too');
    const signedIn = await fetch(`${url}/admin/status`, { headers: { authorization: `Bearer ${await op.token('viewer')}` } });
    await signedIn.arrayBuffer();
    assert.equal(signedIn.status, 200);
  });
});
