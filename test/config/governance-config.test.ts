import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConfigResult, formatIssue, parseConfigText } from '../../src/config/index.js';

// The governance config sections, as docs/governance.md spells them: teams, keys,
// pricing.on_missing and cache reads, governance, audit. Every refusal names its path.

const HASH_A = 'a'.repeat(64);
const HASH_B = 'b'.repeat(64);
const HASH_C = 'C'.repeat(64);

const BASE = `
providers:
  east: { type: openai, base_url: http://127.0.0.1:9001/v1 }
routing:
  routes:
    gpt-4o-mini: { candidates: [ { provider: east } ] }
`;

const FULL = `${BASE}
teams:
  platform:
    allowed_models: ["gpt-4o-mini", "llama-*"]
    rate_limit: { rpm: 600, tpm: 1000000 }
    quota: { tokens_per_day: 5000000 }
    budget: { usd_per_month: 100, on_exceeded: block }
  research: {}
keys:
  - { id: ci-bot, team: platform, sha256: "${HASH_A}", rpm: 60, budget_usd_per_month: 5, expires_at: "2027-06-30T00:00:00Z" }
  - { id: rotating, team: platform, sha256: ["${HASH_B}", "${HASH_C}"] }
  - { id: app, team: research, key: { env: APP_KEY } }
pricing:
  on_missing: allow
  models:
    east/gpt-4o-mini: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.60, cache_read_usd_per_mtok: 0.075 }
governance: { store: redis, redis_url: "redis://127.0.0.1:6379", key_prefix: "switchyard:", on_store_error: fail_closed, default_max_tokens: 2048 }
audit: { file: ./var/audit.jsonl }
`;

function lines(result: ConfigResult): string[] {
  assert.equal(result.ok, false, 'expected the config to be refused');
  return result.ok ? [] : result.issues.map(formatIssue);
}

describe('governance config', () => {
  it('accepts the sections as docs/governance.md writes them', () => {
    const r = parseConfigText(FULL);
    assert.ok(r.ok, JSON.stringify(r));
    const { config } = r;
    assert.deepEqual(config.teams?.platform?.budget, { usd_per_month: 100, on_exceeded: 'block' });
    assert.deepEqual(config.keys?.[0]?.sha256, [HASH_A]);
    assert.deepEqual(config.keys?.[1]?.sha256, [HASH_B, HASH_C.toLowerCase()], 'hashes are normalised to lowercase');
    assert.deepEqual(config.keys?.[2]?.key, { env: 'APP_KEY' });
    assert.equal(config.pricing.models['east/gpt-4o-mini']?.cache_read_usd_per_mtok, 0.075);
    assert.equal(config.governance.store, 'redis');
    assert.equal(config.governance.default_max_tokens, 2048);
    assert.equal(config.audit?.file, './var/audit.jsonl');
  });

  it('defaults to an open gateway with the memory store, fail_closed, 4096 reserved output tokens, sent upstream as the cap', () => {
    const r = parseConfigText(BASE);
    assert.ok(r.ok);
    assert.equal(r.config.keys, undefined);
    assert.deepEqual(r.config.governance, {
      store: 'memory',
      key_prefix: 'switchyard:',
      on_store_error: 'fail_closed',
      default_max_tokens: 4096,
      cap_output: true,
    });
    assert.equal(r.config.pricing.on_missing, undefined, 'absent means allow');
    assert.equal(r.config.audit, undefined);
  });

  it('refuses unknown keys in every new section, naming the path', () => {
    const r = parseConfigText(`${BASE}
teams: { platform: { rate_limit: { rpm: 1, rph: 2 }, colour: red } }
keys: [ { id: k, team: platform, sha256: "${HASH_A}", burst: 3 } ]
governance: { store: memory, ttl: 1 }
audit: { file: a.jsonl, rotate: true }
`);
    assert.deepEqual(lines(r).sort(), [
      'audit.rotate: unknown key',
      'governance.ttl: unknown key',
      'keys[0].burst: unknown key',
      'teams.platform.colour: unknown key',
      'teams.platform.rate_limit.rph: unknown key; did you mean rpm?',
    ]);
  });

  it('refuses a key naming an unknown team, a duplicate id and a reused hash', () => {
    const r = parseConfigText(`${BASE}
teams: { platform: {} }
keys:
  - { id: a, team: platform, sha256: "${HASH_A}" }
  - { id: a, team: nowhere, sha256: "${HASH_A.toUpperCase()}" }
`);
    assert.deepEqual(lines(r), [
      'keys[1].team: unknown team "nowhere"',
      'keys[1].id: duplicate key id "a" (also keys[0])',
      'keys[1].sha256: the same hash is already used by keys[0]',
    ]);
  });

  it('refuses a malformed sha256, three hashes, and a key with both or neither of sha256 and key', () => {
    const r = parseConfigText(`${BASE}
teams: { platform: {} }
keys:
  - { id: a, team: platform, sha256: "abc" }
  - { id: b, team: platform, sha256: ["${HASH_A}", "${HASH_B}", "${HASH_A}"] }
  - { id: c, team: platform }
  - { id: d, team: platform, sha256: "${HASH_A}", key: { env: D_KEY } }
`);
    const out = lines(r);
    assert.ok(out.includes('keys[0].sha256: must be the 64 hex digits of a SHA-256 (see `switchyard keys create`)'), out.join('\n'));
    assert.ok(out.includes('keys[1].sha256: give one hash, or two (old and new) while rotating'), out.join('\n'));
    assert.ok(
      out.some((l) => l.startsWith('keys[2]: set exactly one of sha256')),
      out.join('\n'),
    );
    assert.ok(
      out.some((l) => l.startsWith('keys[3]: set exactly one of sha256')),
      out.join('\n'),
    );
  });

  it('refuses a literal key in config, without echoing it', () => {
    const r = parseConfigText(`${BASE}
teams: { platform: {} }
keys: [ { id: a, team: platform, key: "sk-live-abcdef0123456789" } ]
`);
    const out = lines(r).join('\n');
    assert.match(out, /keys\[0\]\.key: a literal secret is not allowed here/);
    assert.doesNotMatch(out, /sk-live-abcdef/);
  });

  it('refuses a bad expires_at, a negative limit, an unknown on_exceeded and an unknown on_missing', () => {
    const r = parseConfigText(`${BASE}
teams: { platform: { rate_limit: { rpm: -1 }, budget: { usd_per_month: 5, on_exceeded: shout } } }
keys: [ { id: a, team: platform, sha256: "${HASH_A}", expires_at: "next tuesday" } ]
pricing: { on_missing: maybe }
`);
    const out = lines(r);
    assert.ok(out.includes('teams.platform.rate_limit.rpm: must be at least 0'), out.join('\n'));
    assert.ok(out.includes('teams.platform.budget.on_exceeded: must be "block" or "warn"'), out.join('\n'));
    assert.ok(out.includes('keys[0].expires_at: must be an RFC 3339 timestamp, e.g. 2027-06-30T00:00:00Z'), out.join('\n'));
    assert.ok(out.includes('pricing.on_missing: must be "allow" or "block"'), out.join('\n'));
  });

  it('governance: redis needs redis_url, memory takes none, and a password in the URL or its query is refused', () => {
    assert.deepEqual(lines(parseConfigText(`${BASE}\ngovernance: { store: redis }\n`)), [
      'governance.redis_url: is required when store is "redis"',
    ]);
    assert.deepEqual(lines(parseConfigText(`${BASE}\ngovernance: { redis_url: "redis://127.0.0.1:6379" }\n`)), [
      'governance.redis_url: only applies when store is "redis"',
    ]);
    const pw = lines(parseConfigText(`${BASE}\ngovernance: { store: redis, redis_url: "redis://:hunter2@127.0.0.1:6379" }\n`));
    assert.deepEqual(pw, [
      'governance.redis_url: must not contain a password: give it as governance.redis_password ({env: NAME} or {file: PATH})',
    ]);
    // ioredis takes every query parameter as a connection option, a password among them.
    const query = lines(parseConfigText(`${BASE}\ngovernance: { store: redis, redis_url: "redis://127.0.0.1:6379/0?Password=hunter2" }\n`));
    assert.deepEqual(query, [
      'governance.redis_url: must not carry a password in its query: give it as governance.redis_password ({env: NAME} or {file: PATH})',
    ]);
    assert.ok(!query.join('\n').includes('hunter2'), 'the refusal never echoes the value');
    assert.equal(parseConfigText(`${BASE}\ngovernance: { store: redis, redis_url: "redis://127.0.0.1:6379/0?family=4" }\n`).ok, true);
    assert.deepEqual(
      lines(parseConfigText(`${BASE}\ngovernance: { store: redis, redis_url: "http://127.0.0.1:6379", on_store_error: ignore }\n`)),
      ['governance.redis_url: must be a redis:// or rediss:// URL', 'governance.on_store_error: must be "fail_closed" or "fail_open"'],
    );
  });
});
