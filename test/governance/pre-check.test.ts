import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildGovernancePolicy,
  duration,
  estimateTokens,
  governanceStatus,
  hashKey,
  MemoryGovernanceStore,
  type PriceTable,
  type Principal,
  preCheck,
  rateLimitHeaders,
  refusalError,
  release,
  settle,
} from '../../src/governance/index.js';

// The request-path calls server/ makes, in order, against the memory store: pre-check
// (allow-list, then team and key limits, with a worst-case reservation), then settle or
// release. Time is injected.

const NOW = Date.UTC(2026, 10, 15, 12, 0, 0);
const pricing: PriceTable = {
  'east/gpt-4o-mini': { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 },
  'west/gpt-4o-mini': { input_usd_per_mtok: 0.3, output_usd_per_mtok: 1.2 },
};
const targets = [
  { provider: 'east', model: 'gpt-4o-mini' },
  { provider: 'west', model: 'gpt-4o-mini' },
];

function policy(onMissingPrice: 'allow' | 'block' = 'allow') {
  return buildGovernancePolicy({
    teams: [
      { id: 'platform', allowedModels: ['gpt-4o-mini', 'llama-*'], limits: { rpm: 600, budgetMicroUsdPerMonth: 100_000_000 } },
      { id: 'research', limits: {} },
    ],
    keys: [
      { id: 'ci-bot', team: 'platform', sha256: [hashKey('k')], limits: { rpm: 2, budgetMicroUsdPerMonth: 5_000 }, expiresAtMs: null },
    ],
    defaultMaxTokens: 4096,
    onMissingPrice,
  });
}

const ci: Principal = { keyId: 'ci-bot', team: 'platform' };

describe('pre-check, settle and release', () => {
  it('estimates input as body bytes / 4 and reserves max_tokens, or the default', () => {
    assert.deepEqual(estimateTokens(401, 100, 4096), { inputTokens: 101, maxOutputTokens: 100 });
    assert.deepEqual(estimateTokens(0, null, 4096), { inputTokens: 0, maxOutputTokens: 4096 });
  });

  it("without the client's cap, reserves the most any target may write: its max_output_tokens, else default_max_tokens", async () => {
    const capped: PriceTable = {
      'east/gpt-4o-mini': { input_usd_per_mtok: 0, output_usd_per_mtok: 0, max_output_tokens: 500 },
      'west/gpt-4o-mini': { input_usd_per_mtok: 0, output_usd_per_mtok: 0, max_output_tokens: 16_384 },
    };
    const ask = async (routeTargets: typeof targets, maxTokens: number | null) => {
      const a = await preCheck(
        new MemoryGovernanceStore(),
        policy(),
        ci,
        { model: 'gpt-4o-mini', bodyBytes: 0, maxTokens, targets: routeTargets, pricing: capped },
        NOW,
      );
      assert.ok(a.ok && a.reservation !== null);
      return a.reservation.tokens;
    };
    assert.equal(await ask([targets[0] as (typeof targets)[0]], null), 500, "the one target's own limit, below the default");
    assert.equal(await ask(targets, null), 16_384, 'the most generous target of the route, above the default');
    assert.equal(
      await ask(
        [
          { provider: 'east', model: 'gpt-4o-mini' },
          { provider: 'north', model: 'other' },
        ],
        null,
      ),
      4096,
      'a target without one: the default',
    );
    assert.equal(await ask(targets, 50), 50, "the client's cap wins");
  });

  it('refuses a model outside the team allow-list with model_not_allowed (403) before counting anything', async () => {
    const store = new MemoryGovernanceStore();
    const a = await preCheck(store, policy(), ci, { model: 'gpt-4o', bodyBytes: 100, maxTokens: 10, targets, pricing }, NOW);
    assert.ok(!a.ok);
    assert.equal(a.refusal.code, 'model_not_allowed');
    assert.equal(refusalError(a.refusal).status, 403);
    const status = await governanceStatus(store, policy(), NOW);
    assert.equal(status.teams.platform?.requestsThisMinute.used, 0);
  });

  it('reserves the worst case at the dearest candidate, then settles the actual cost at the prices passed in', async () => {
    const store = new MemoryGovernanceStore();
    const a = await preCheck(store, policy(), ci, { model: 'gpt-4o-mini', bodyBytes: 4000, maxTokens: 1000, targets, pricing }, NOW);
    assert.ok(a.ok && a.reservation !== null);
    // 1000 input x 0.3 + 1000 output x 1.2 at west = 1500 µUSD.
    assert.equal(a.reservation.costMicroUsd, 1500);
    assert.equal(a.reservation.tokens, 2000);
    // A reload to new prices does not matter: the request's own table is passed in.
    const s = await settle(
      store,
      a.reservation,
      { provider: 'east', model: 'gpt-4o-mini' },
      { inputTokens: 900, outputTokens: 100 },
      pricing,
      NOW + 10,
    );
    assert.deepEqual(s, { costMicroUsd: 195, pricingMissing: false, usageMissing: false });
    const status = await governanceStatus(store, policy(), NOW + 20);
    assert.deepEqual(status.keys['ci-bot']?.spendThisMonthMicroUsd, { used: 195, reservedMicroUsd: 0, limit: 5000 });
    assert.equal(status.keys['ci-bot']?.team, 'platform');
    assert.equal(status.teams.platform?.tokensToday.used, 1000);
    assert.equal(status.teams.research?.requestsThisMinute.used, 0);
  });

  it('a budget refusal with something left says what the request reserves, at which price, what is left, and the max_tokens that fits', async () => {
    const scant = buildGovernancePolicy({
      teams: [{ id: 'scant', limits: { budgetMicroUsdPerMonth: 50 } }],
      keys: [{ id: 'scant-bot', team: 'scant', sha256: [hashKey('s')], limits: {}, expiresAtMs: null }],
      defaultMaxTokens: 4096,
      onMissingPrice: 'allow',
    });
    const who: Principal = { keyId: 'scant-bot', team: 'scant' };
    const store = new MemoryGovernanceStore();
    const ask = (maxTokens: number | null, bodyBytes = 40) =>
      preCheck(store, scant, who, { model: 'gpt-4o-mini', bodyBytes, maxTokens, targets, pricing }, NOW);
    const capped = await ask(100);
    assert.ok(!capped.ok);
    // 10 input x 0.3 + 100 output x 1.2 at west, the dearer, = 123 µUSD; 50 left fits (50e6 - 10 x 0.3e6) / 1.2e6 = 39 output tokens.
    assert.equal(
      capped.refusal.message,
      'this request reserves up to 0.000123 USD (about 10 input tokens and 100 output tokens, its max_tokens, at the price of its dearest candidate (west/gpt-4o-mini)), more than the 0.00005 USD team "scant" has left of its monthly budget; a max_tokens of at most 39 would fit, or wait for the budget to renew at the start of the next UTC month',
    );
    assert.equal(refusalError(capped.refusal).code, 'budget_exceeded');
    const uncapped = await ask(null);
    assert.ok(!uncapped.ok);
    assert.match(uncapped.refusal.message, /4096 output tokens, the most its models may write, as it sets no output cap \(max_tokens\)/);
    const hugeInput = await ask(1, 4 * 200);
    assert.ok(!hugeInput.ok);
    assert.match(hugeInput.refusal.message, /its input alone costs more than that: shorten it/);
    assert.ok((await ask(39)).ok, 'the max_tokens it named fits');
  });

  it('a budget refusal is 402 budget_exceeded; a rate refusal is 429 with retry-after and x-ratelimit headers', async () => {
    const store = new MemoryGovernanceStore();
    const p = policy();
    const huge = await preCheck(store, p, ci, { model: 'gpt-4o-mini', bodyBytes: 4, maxTokens: 10_000, targets, pricing }, NOW);
    assert.ok(!huge.ok);
    const budget = refusalError(huge.refusal);
    assert.deepEqual([budget.code, budget.status], ['budget_exceeded', 402]);
    for (let i = 0; i < 2; i += 1)
      assert.ok((await preCheck(store, p, ci, { model: 'gpt-4o-mini', bodyBytes: 4, maxTokens: 1, targets, pricing }, NOW + i)).ok);
    const limited = await preCheck(store, p, ci, { model: 'gpt-4o-mini', bodyBytes: 4, maxTokens: 1, targets, pricing }, NOW + 30_000);
    assert.ok(!limited.ok);
    const err = refusalError(limited.refusal);
    assert.deepEqual([err.code, err.status], ['rate_limit_exceeded', 429]);
    assert.deepEqual(err.headers, {
      'x-ratelimit-limit-requests': '2',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '30s',
      'retry-after': '30',
    });
  });

  it('formats x-ratelimit reset durations as OpenAI does', () => {
    assert.deepEqual([0, 1, 1000, 1001, 59_000, 60_000, 360_000, 61_500].map(duration), [
      '0s',
      '1s',
      '1s',
      '2s',
      '59s',
      '1m0s',
      '6m0s',
      '1m2s',
    ]);
  });

  it('release gives the reservation back when the request failed upstream', async () => {
    const store = new MemoryGovernanceStore();
    const p = policy();
    const a = await preCheck(store, p, ci, { model: 'gpt-4o-mini', bodyBytes: 4, maxTokens: 1000, targets, pricing }, NOW);
    assert.ok(a.ok);
    await release(store, a.reservation, NOW + 1);
    const status = await governanceStatus(store, p, NOW + 2);
    assert.deepEqual(status.keys['ci-bot']?.spendThisMonthMicroUsd, { used: 0, reservedMicroUsd: 0, limit: 5000 });
  });

  it('unknown usage bills the reservation; an unpriced model costs 0 and is flagged', async () => {
    const store = new MemoryGovernanceStore();
    const p = policy();
    const a = await preCheck(store, p, ci, { model: 'gpt-4o-mini', bodyBytes: 4, maxTokens: 100, targets, pricing }, NOW);
    assert.ok(a.ok && a.reservation !== null);
    const s = await settle(store, a.reservation, { provider: 'west', model: 'gpt-4o-mini' }, null, pricing, NOW + 1);
    assert.deepEqual(s, { costMicroUsd: a.reservation.costMicroUsd, pricingMissing: false, usageMissing: true });
    const unpriced = await settle(
      store,
      null,
      { provider: 'central', model: 'gpt-4o-mini' },
      { inputTokens: 1, outputTokens: 1 },
      pricing,
      NOW + 2,
    );
    assert.deepEqual(unpriced, { costMicroUsd: null, pricingMissing: true, usageMissing: false });
  });

  it('on_missing: block refuses a route none of whose candidates is priced; allow serves it and lists them', async () => {
    const store = new MemoryGovernanceStore();
    const demand = { model: 'llama-3', bodyBytes: 4, maxTokens: 1, targets: [{ provider: 'east', model: 'llama-3' }], pricing };
    const blocked = await preCheck(store, policy('block'), ci, demand, NOW);
    assert.ok(!blocked.ok);
    assert.equal(blocked.refusal.code, 'model_not_allowed');
    const allowed = await preCheck(store, policy('allow'), ci, demand, NOW);
    assert.ok(allowed.ok);
    assert.deepEqual(allowed.unpriced, [{ provider: 'east', model: 'llama-3' }]);
  });

  it('the anonymous caller of an open gateway has no limits and nothing to settle', async () => {
    const store = new MemoryGovernanceStore();
    const a = await preCheck(
      store,
      policy(),
      { keyId: null, team: null },
      { model: 'anything', bodyBytes: 4, maxTokens: 1, targets, pricing },
      NOW,
    );
    assert.ok(a.ok);
    assert.equal(a.reservation, null);
    assert.deepEqual(rateLimitHeaders(a.rateLimit), {});
  });

  it('refuses a policy whose key names an unknown team', () => {
    assert.throws(
      () =>
        buildGovernancePolicy({
          teams: [],
          keys: [{ id: 'x', team: 'nope', sha256: [hashKey('x')], limits: {}, expiresAtMs: null }],
          defaultMaxTokens: 1,
          onMissingPrice: 'allow',
        }),
      /unknown team "nope"/,
    );
  });
});
