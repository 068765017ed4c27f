import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type GatewayConfig, parseConfigText, resolveSecret } from '../../src/config/index.js';
import {
  authenticate,
  buildGovernancePolicy,
  type GovernancePolicy,
  hashKey,
  type KeyRecord,
  MemoryGovernanceStore,
  preCheck,
  type TeamRecord,
} from '../../src/governance/index.js';

// governance/ never reads config: server/ adapts the config to governance's own input
// types once per generation. This is that adapter, kept here (test-only) as the reference
// the wiring can lift into server/, and proved against a config written as issue 9 writes it.

/** Config -> GovernancePolicy. Budgets in USD become integer micro-USD; `key: {env}` is resolved and hashed. */
export function governancePolicyOf(config: GatewayConfig, env: NodeJS.ProcessEnv): GovernancePolicy {
  const usd = (v: number | undefined): number | undefined => (v === undefined ? undefined : Math.round(v * 1e6));
  const teams: TeamRecord[] = Object.entries(config.teams ?? {}).map(([id, t]) => ({
    id,
    allowedModels: t.allowed_models,
    limits: {
      rpm: t.rate_limit?.rpm,
      tpm: t.rate_limit?.tpm,
      tokensPerDay: t.quota?.tokens_per_day,
      budgetMicroUsdPerMonth: usd(t.budget?.usd_per_month),
      budgetOnExceeded: t.budget?.on_exceeded,
    },
  }));
  const keys: KeyRecord[] = (config.keys ?? []).map((k, i) => {
    let sha256 = k.sha256;
    if (sha256 === undefined && k.key !== undefined) {
      const secret = resolveSecret(k.key, env);
      if (!secret.ok) throw new Error(`keys[${i}].key: ${secret.message}`);
      sha256 = [hashKey(secret.value)];
    }
    return {
      id: k.id,
      team: k.team,
      sha256: sha256 ?? [],
      limits: { rpm: k.rpm, tpm: k.tpm, tokensPerDay: k.tokens_per_day, budgetMicroUsdPerMonth: usd(k.budget_usd_per_month) },
      expiresAtMs: k.expires_at === undefined ? null : Date.parse(k.expires_at),
    };
  });
  return buildGovernancePolicy({
    teams,
    keys,
    defaultMaxTokens: config.governance.default_max_tokens,
    onMissingPrice: config.pricing.on_missing ?? 'allow',
  });
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

describe('config to governance policy (the adapter server/ needs)', () => {
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
