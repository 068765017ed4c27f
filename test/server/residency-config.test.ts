import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess, runCli } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { v1 } from '../support/managed.js';
import { chatCount } from '../support/observe.js';
import { startOidcProvider } from '../support/oidc.js';
import { fileResources } from '../support/resources.js';

// Residency rules as config (ADR 0043): a key may narrow its team's zones, never widen them,
// in the config file (refused by validate and at start, naming the key's path) and through
// the admin API (400 naming the field); validate warns about a team no provider can serve;
// a managed team's rule holds for its managed key's requests at once.

const resources = fileResources('switchyard-residency-');
const ADMIN = 'admin-token-for-the-residency-tests';
const FILE_KEY = 'sk-residency-file-key-0123456789abcdef';
const TEAM_TOKEN = 'team-token-for-the-residency-tests';

let eu: MockProvider;
let us: MockProvider;
before(async () => {
  [eu, us] = await Promise.all([resources.startMock({ name: 'eu' }), resources.startMock({ name: 'us' })]);
});

/** `eu` labelled eu, `us` labelled us, and one route over both, us first. */
function gatewayConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const config = baseConfig(
    { us: us.baseUrl, eu: eu.baseUrl },
    { m: { policy: 'ordered', candidates: [{ provider: 'us' }, { provider: 'eu' }] } },
    extra,
  );
  const providers = config.providers as Record<string, Record<string, unknown>>;
  (providers.eu as Record<string, unknown>).zones = ['eu'];
  (providers.us as Record<string, unknown>).zones = ['us'];
  return config;
}

function validate(config: Record<string, unknown>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const path = join(resources.tempDir(), 'gateway.yaml');
  writeFileSync(path, stringify(config));
  return runCli(['validate', '--config', path]);
}

describe('residency in the config file', () => {
  it('a key whose zones are wider than its team is refused, naming its path; a narrower one is valid', async () => {
    const wider = await validate(
      gatewayConfig({
        teams: { eng: { residency: { allow: ['eu'] } } },
        keys: [
          { id: 'ok', team: 'eng', sha256: hashKey('sk-a-0123456789abcdef'), residency: { allow: ['eu'] } },
          { id: 'ok2', team: 'eng', sha256: hashKey('sk-b-0123456789abcdef') },
          { id: 'wide', team: 'eng', sha256: hashKey('sk-c-0123456789abcdef'), residency: { allow: ['eu', 'us'], fail_closed: false } },
        ],
      }),
    );
    assert.equal(wider.code, 1, wider.stdout + wider.stderr);
    assert.match(wider.stderr, /keys\[2\]\.residency\.allow\[1\]: zone "us" is outside team "eng"'s residency \(eu\)/);
    assert.match(wider.stderr, /keys\[2\]\.residency\.fail_closed: must stay true/);
    assert.doesNotMatch(wider.stderr, /keys\[0\]|keys\[1\]/);
    const narrow = await validate(
      gatewayConfig({
        teams: { eng: { residency: { allow: ['eu', 'us'] } } },
        keys: [{ id: 'ok', team: 'eng', sha256: hashKey('sk-a-0123456789abcdef'), residency: { allow: ['eu'] } }],
      }),
    );
    assert.equal(narrow.code, 0, narrow.stdout + narrow.stderr);
  });

  it('a malformed rule or zone label is refused with its path', async () => {
    const bad = await validate(
      gatewayConfig({
        teams: { eng: { residency: { allow: [] } }, ops: { residency: { allow: ['EU West'] } } },
      }),
    );
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /teams\.eng\.residency\.allow: must name at least one zone/);
    assert.match(bad.stderr, /teams\.ops\.residency\.allow\[0\]: must be a short zone label/);
  });

  it('validate warns about a team whose zones no provider serves, and not about one that is served', async () => {
    const r = await validate(
      gatewayConfig({ teams: { apac: { residency: { allow: ['apac'] } }, emea: { residency: { allow: ['eu'] } } } }),
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stderr, /warning: teams\.apac\.residency\.allow: no provider lies within apac/);
    assert.doesNotMatch(r.stderr, /teams\.emea/);
  });
});

describe('residency through the admin API', () => {
  let db: TestDatabase;
  let gw: GatewayProcess;
  let admin: string;

  before(async () => {
    db = sqliteDatabase();
    gw = await resources.startGw(
      gatewayConfig({
        server: {
          admin_token: { env: 'ADMIN_TOKEN' },
          admin_tokens: [{ id: 'emea-bot', token: { env: 'TEAM_TOKEN' }, role: 'team:emea' }],
        },
        teams: { platform: { residency: { allow: ['eu'] } } },
        keys: [{ id: 'platform-ci', team: 'platform', key: { env: 'FILE_KEY' } }],
        database: { url: db.url, recheck_ms: 500 },
      }),
      { env: { ADMIN_TOKEN: ADMIN, TEAM_TOKEN, FILE_KEY } },
    );
    admin = gw.adminUrl as string;
  });
  after(async () => {
    await gw.stop();
    await db.drop();
  });

  it("a managed key wider than its team (the file's or the database's) is refused with 400 naming the field, and nothing is committed", async () => {
    const wide = await v1(admin, 'POST', 'keys', {
      token: ADMIN,
      body: { id: 'wide', team: 'platform', residency: { allow: ['eu', 'us'] } },
    });
    assert.equal(wide.status, 400, wide.text);
    assert.equal(wide.body.error.code, 'invalid_request');
    assert.deepEqual(
      wide.body.error.errors.map((e: { path: string }) => e.path),
      ['residency.allow[1]'],
    );
    assert.equal((await v1(admin, 'GET', 'keys/wide', { token: ADMIN })).status, 404, 'nothing was committed');

    const team = await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'emea', residency: { allow: ['eu'] } } });
    assert.equal(team.status, 201, team.text);
    const key = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { id: 'emea-web', team: 'emea' } });
    assert.equal(key.status, 201, key.text);
    const widened = await v1(admin, 'PATCH', 'keys/emea-web', { token: ADMIN, body: { residency: { allow: ['us'] } } });
    assert.equal(widened.status, 400, widened.text);
    assert.deepEqual(
      widened.body.error.errors.map((e: { path: string }) => e.path),
      ['residency.allow[0]'],
    );
    const malformed = await v1(admin, 'PATCH', 'teams/emea', { token: ADMIN, body: { residency: { allow: 'eu' } } });
    assert.equal(malformed.status, 400, malformed.text);
    assert.equal(malformed.body.error.errors[0].path, 'residency.allow');
  });

  it("a team's token may narrow its key's residency, never loosen it (403 naming the field)", async () => {
    const key = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { id: 'emea-batch', team: 'emea', residency: { allow: ['eu'] } } });
    assert.equal(key.status, 201, key.text);
    for (const [body, path] of [
      [{ residency: null }, 'residency'],
      [{ residency: { allow: ['eu'], fail_closed: false } }, 'residency.fail_closed'],
    ] as const) {
      const refused = await v1(admin, 'PATCH', 'keys/emea-batch', { token: TEAM_TOKEN, body });
      assert.equal(refused.status, 403, refused.text);
      assert.deepEqual(
        refused.body.error.errors.map((e: { path: string }) => e.path),
        [path],
      );
    }
    const kept = await v1(admin, 'GET', 'keys/emea-batch', { token: ADMIN });
    assert.deepEqual(kept.body.residency, { allow: ['eu'] });
  });

  it("a managed team's rule holds for its managed key at once: the us candidate first in the route receives nothing", async () => {
    const team = await v1(admin, 'POST', 'teams', { token: ADMIN, body: { id: 'berlin', residency: { allow: ['eu'] } } });
    assert.equal(team.status, 201, team.text);
    const key = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { id: 'berlin-app', team: 'berlin' } });
    assert.equal(key.status, 201, key.text);
    us.reset();
    eu.reset();
    const r = await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${key.body.key as string}` });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'eu');
    assert.equal(chatCount(us), 0);
    // The file's key of a file team too.
    const file = await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${FILE_KEY}` });
    assert.equal(file.headers.get('x-switchyard-provider'), 'eu');
    assert.equal(chatCount(us), 0);
  });
});

describe('residency for a caller who signs in', () => {
  it("a JWT caller is held to its team's zones: the us candidate first in the route receives nothing", async () => {
    const op = await startOidcProvider({
      clients: [
        { id: 'berlin-app', claims: { team: 'berlin' } },
        { id: 'anywhere-app', claims: { team: 'anywhere' } },
      ],
    });
    resources.addUpstream(() => op.stop());
    const gw = await resources.startGw(
      gatewayConfig({
        teams: { berlin: { residency: { allow: ['eu'] } }, anywhere: {} },
        auth: {
          jwt: {
            mode: 'strict',
            issuers: [{ id: 'corp', issuer: op.issuer, audiences: ['switchyard'], jwks: { url: op.jwksUri }, team: { claim: 'team' } }],
          },
        },
      }),
    );
    us.reset();
    eu.reset();
    const r = await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${await op.token('berlin-app')}` });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-provider'), 'eu');
    assert.equal(chatCount(us), 0, 'the us provider received nothing');
    // A signed-in caller of a team without a rule is served by the us candidate, first in the route.
    const open = await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${await op.token('anywhere-app')}` });
    assert.equal(open.headers.get('x-switchyard-provider'), 'us');
  });
});
