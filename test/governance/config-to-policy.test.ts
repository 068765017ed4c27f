import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type GatewayConfig, parseConfigText } from '../../src/config/index.js';
import { authenticate, type GovernancePolicy, hashKey, MemoryGovernanceStore, preCheck } from '../../src/governance/index.js';
import { buildGeneration, buildKeyring, readKeyringFile } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';
import { policyOf } from '../../src/request/policy.js';

// governance/ never reads config: request/ adapts each keyring (the config's teams and keys,
// and the key digests the keyring build resolved) to governance's own input types. This proves that
// adapter (request/policy.ts policyOf) on a config written as docs/governance.md writes it.

function governancePolicyOf(config: GatewayConfig, env: NodeJS.ProcessEnv): GovernancePolicy {
  const built = buildGeneration({ config, sourceHash: '', number: 1, env, poolFor: (spec) => new PoolRegistry().acquire(spec) });
  assert.ok(built.ok, JSON.stringify(built));
  const read = readKeyringFile(config, '', env);
  assert.deepEqual(read.issues, []);
  return policyOf(buildKeyring(read.file, null, 1));
}

const CI_KEY = 'sy-ci-key-for-tests';
const CONFIG = `
providers:
  east: { type: openai, base_url: http://127.0.0.1:9001/v1 }
routing:
  routes:
    gpt-4o-mini: { candidates: [ { provider: east } ] }
teams:
  platform:
    allowed_models: ["gpt-4o-mini", "llama-*"]
    rate_limit: { rpm: 600, tpm: 1000000 }
    budget: { usd_per_month: 100, on_exceeded: block }
keys:
  - { id: ci-bot, team: platform, sha256: "${hashKey(CI_KEY)}", rpm: 1, budget_usd_per_month: 5, expires_at: "2027-06-30T00:00:00Z" }
  - { id: app, team: platform, key: { env: SWITCHYARD_TEST_APP_KEY } }
pricing:
  models:
    east/gpt-4o-mini: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.60, cache_read_usd_per_mtok: 0.075 }
`;

describe('config to governance policy (the adapter in server/)', () => {
  const parsed = parseConfigText(CONFIG);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  const policy = governancePolicyOf(parsed.config, { SWITCHYARD_TEST_APP_KEY: 'sy-app-key' });
  const now = Date.UTC(2026, 10, 30, 12, 0, 0);

  it('authenticates a sha256 key and an {env} key, each to its team', () => {
    const ci = authenticate(policy.keys, { authorization: `Bearer ${CI_KEY}` }, now);
    assert.ok(ci.ok);
    assert.deepEqual(ci.principal, { keyId: 'ci-bot', team: 'platform' });
    const app = authenticate(policy.keys, { 'x-api-key': 'sy-app-key' }, now);
    assert.ok(app.ok);
    assert.equal(app.principal.keyId, 'app');
  });

  it('turns USD budgets into micro-USD and applies the key limit on top of the team limit', async () => {
    assert.equal(policy.teams.get('platform')?.record.limits.budgetMicroUsdPerMonth, 100_000_000);
    assert.equal(policy.keys.byId.get('ci-bot')?.limits.budgetMicroUsdPerMonth, 5_000_000);
    const store = new MemoryGovernanceStore();
    const principal = { keyId: 'ci-bot', team: 'platform' };
    const demand = {
      model: 'gpt-4o-mini',
      bodyBytes: 100,
      maxTokens: 10,
      targets: [{ provider: 'east', model: 'gpt-4o-mini' }],
      pricing: parsed.ok ? parsed.config.pricing.models : {},
    };
    assert.ok((await preCheck(store, policy, principal, demand, now)).ok);
    const second = await preCheck(store, policy, principal, demand, now + 1);
    assert.ok(!second.ok);
    assert.deepEqual([second.refusal.code, second.refusal.scope], ['rate_limit_exceeded', { kind: 'key', id: 'ci-bot' }]);
  });
});
