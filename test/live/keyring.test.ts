import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type GatewayConfig, parseConfigText } from '../../src/config/index.js';
import type { ManagedKey, ManagedSnapshot } from '../../src/database/index.js';
import { authenticate, hashKey, scopesOf } from '../../src/governance/index.js';
import { buildKeyring, diffKeyrings, prepareKeyring, readKeyringFile } from '../../src/live/index.js';
import { policyOf } from '../../src/request/policy.js';

// The keyring alone: a database change builds the next keyring from the serving one's file
// part and the new rows (no config read, no generation), and its policy is the file's,
// compiled once, with the database's keys layered over it.

const FILE_KEY = 'sy-file-key-of-the-keyring-tests';

function fileConfig(): GatewayConfig {
  const parsed = parseConfigText(
    `
providers: { east: { type: openai, base_url: "http://127.0.0.1:9/v1" } }
routing: { routes: { m: { candidates: [{ provider: east }] } } }
teams: { platform: { rate_limit: { rpm: 100 } } }
keys: [{ id: file-key, team: platform, sha256: "${hashKey(FILE_KEY)}" }]
database: { url: "sqlite::memory:" }
`,
    {},
  );
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return parsed.config;
}

function row(id: string, secret: string, team = 'platform'): ManagedKey {
  return {
    id,
    team,
    sha256: hashKey(secret),
    prefix: secret.slice(0, 10),
    previous: null,
    spec: { rpm: 5 },
    metadata: {},
    expiresAt: null,
    revokedAt: null,
    version: 1,
    createdAt: '2026-01-01T00:00:00Z',
    updatedAt: '2026-01-01T00:00:00Z',
    lastUsedAt: null,
  };
}

const snapshot = (version: number, keys: ManagedKey[]): ManagedSnapshot => ({ version, teams: [], keys });
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('the keyring', () => {
  it('a database change builds the next keyring from the same file part, and the same version is a no-op', async () => {
    const config = fileConfig();
    const serving = buildKeyring(readKeyringFile(config, 'hash', {}).file, snapshot(1, []), 7);
    const next = await prepareKeyring(serving, config, async () => snapshot(2, [row('db-key', 'sy-database-key-one')]));
    assert.equal(next.outcome, 'built');
    if (next.outcome !== 'built') return;
    assert.equal(next.keyring.number, 8);
    assert.equal(next.keyring.file, serving.file, 'the file part is shared, not read again');
    assert.deepEqual(
      next.keyring.keys.map((k) => k.id),
      ['file-key', 'db-key'],
    );
    assert.deepEqual(diffKeyrings(serving, next.keyring).keysAdded, ['db-key']);
    const same = await prepareKeyring(next.keyring, config, async () => snapshot(2, [row('db-key', 'sy-database-key-one')]));
    assert.equal(same.outcome, 'unchanged');
    const away = await prepareKeyring(next.keyring, config, async () => {
      throw new Error('connection refused');
    });
    assert.equal(away.outcome, 'rejected', 'a database that cannot be read keeps the serving keyring');
  });

  it('its policy authenticates the file keys and the database keys, the file part compiled once', () => {
    const config = fileConfig();
    const file = readKeyringFile(config, 'hash', {}).file;
    const one = buildKeyring(file, snapshot(1, [row('db-key', 'sy-database-key-one')]), 1);
    const two = buildKeyring(file, snapshot(2, [row('db-key', 'sy-database-key-one'), row('db-two', 'sy-database-key-two')]), 2);
    const p1 = policyOf(one);
    const p2 = policyOf(two);
    for (const [policy, keys] of [
      [p1, ['file-key', 'db-key']],
      [p2, ['file-key', 'db-key', 'db-two']],
    ] as const) {
      assert.deepEqual([...policy.keys.byId.keys()], keys);
      assert.equal(policy.keys.open, false);
    }
    const now = Date.now();
    const principalOf = (r: ReturnType<typeof authenticate>) => (r.ok ? r.principal : null);
    assert.deepEqual(principalOf(authenticate(p2.keys, bearer(FILE_KEY), now)), { keyId: 'file-key', team: 'platform' });
    assert.deepEqual(principalOf(authenticate(p2.keys, bearer('sy-database-key-two'), now)), { keyId: 'db-two', team: 'platform' });
    assert.equal(authenticate(p1.keys, bearer('sy-database-key-two'), now).ok, false, 'a keyring holds only its own keys');
    // The file key's scopes are the very same objects in both: its counters are found by identity.
    const fileKey = { keyId: 'file-key', team: 'platform' };
    assert.equal(scopesOf(p1, fileKey), scopesOf(p2, fileKey));
    // A database key counts against its file team's very scope object too.
    assert.equal(scopesOf(p2, { keyId: 'db-two', team: 'platform' })[0], scopesOf(p2, fileKey)[0]);
  });

  it('a database key whose secret is a file key is left out of the keyring, with a warning', async () => {
    const config = fileConfig();
    const serving = buildKeyring(readKeyringFile(config, 'hash', {}).file, snapshot(1, []), 1);
    const next = await prepareKeyring(serving, config, async () => snapshot(2, [row('copy', FILE_KEY)]));
    assert.equal(next.outcome, 'built');
    if (next.outcome !== 'built') return;
    assert.deepEqual(
      next.keyring.keys.map((k) => k.id),
      ['file-key'],
    );
    assert.ok(next.warnings.some((w) => /"copy" is skipped: its secret's hash is another key's/.test(w)));
  });
});
