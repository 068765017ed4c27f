import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildGovernancePolicy,
  hashKey,
  MemoryGovernanceStore,
  type PriceTable,
  type Principal,
  preCheck,
  refusalError,
} from '../../src/governance/index.js';

// A request whose tokens a limit could never hold, even with nothing else counted, is
// refused at once with 400 over_limit_capacity, never with a 429 whose retry-after cannot
// help; and it takes nothing from any counter.

const NOW = Date.UTC(2026, 10, 15, 12, 0, 0);
const pricing: PriceTable = { 'east/m': { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } };
const targets = [{ provider: 'east', model: 'm' }];

const policyWith = (capOutput: boolean) =>
  buildGovernancePolicy({
    teams: [
      { id: 'minute', limits: { tpm: 3000 } },
      { id: 'day', limits: { tokensPerDay: 500 } },
      { id: 'budget', limits: { budgetMicroUsdPerMonth: 1_000_000 } },
      { id: 'free', limits: {} },
    ],
    keys: [
      { id: 'k-minute', team: 'minute', sha256: [hashKey('a')], limits: {}, expiresAtMs: null },
      { id: 'k-day', team: 'day', sha256: [hashKey('b')], limits: { tpm: 100 }, expiresAtMs: null },
      { id: 'k-budget', team: 'budget', sha256: [hashKey('c')], limits: {}, expiresAtMs: null },
      { id: 'k-free', team: 'free', sha256: [hashKey('d')], limits: {}, expiresAtMs: null },
    ],
    defaultMaxTokens: 4096,
    onMissingPrice: 'allow',
    capOutput,
  });
/** governance.cap_output: false, where a request that sets no cap is reserved (and refused) at the default. */
const policy = policyWith(false);
const capping = policyWith(true);

const minute: Principal = { keyId: 'k-minute', team: 'minute' };
const day: Principal = { keyId: 'k-day', team: 'day' };

describe('over_limit_capacity (governance.cap_output: false)', () => {
  it('a request without max_tokens under a tpm below default_max_tokens is 400, naming the limit and the cap that fits', async () => {
    const store = new MemoryGovernanceStore();
    const a = await preCheck(store, policy, minute, { model: 'm', bodyBytes: 400, maxTokens: null, targets, pricing }, NOW);
    assert.ok(!a.ok);
    assert.equal(a.refusal.code, 'over_limit_capacity');
    assert.equal(a.refusal.limit, 'tpm');
    assert.deepEqual(a.refusal.scope, { kind: 'team', id: 'minute' });
    assert.equal(a.refusal.retryAfterS, null);
    assert.match(a.refusal.message, /reserves 4196 tokens/);
    assert.match(a.refusal.message, /governance\.default_max_tokens/);
    assert.match(a.refusal.message, /an output cap of at most 2900 would fit/);
    const err = refusalError(a.refusal);
    assert.deepEqual([err.status, err.headers?.['retry-after']], [400, undefined]);
  });

  it('the same request with a cap that fits is admitted, and the refusal took nothing from the counters', async () => {
    const store = new MemoryGovernanceStore();
    await preCheck(store, policy, minute, { model: 'm', bodyBytes: 400, maxTokens: null, targets, pricing }, NOW);
    const a = await preCheck(store, policy, minute, { model: 'm', bodyBytes: 400, maxTokens: 2900, targets, pricing }, NOW + 1);
    assert.ok(a.ok, 'exactly the room that was named fits an empty window');
  });

  it("a key's own tpm refuses a request its team's daily quota would hold, naming the key and the request's cap", async () => {
    const store = new MemoryGovernanceStore();
    const overKey = await preCheck(store, policy, day, { model: 'm', bodyBytes: 40, maxTokens: 200, targets, pricing }, NOW);
    assert.ok(!overKey.ok);
    assert.equal(overKey.refusal.code, 'over_limit_capacity');
    assert.equal(overKey.refusal.limit, 'tpm');
    assert.deepEqual(overKey.refusal.scope, { kind: 'key', id: 'k-day' });
    assert.match(overKey.refusal.message, /200 output tokens, the request's cap/);
    assert.match(overKey.refusal.message, /an output cap of at most 90 would fit/);
  });

  it('a request whose input alone is over the limit says so', async () => {
    const store = new MemoryGovernanceStore();
    const a = await preCheck(store, policy, minute, { model: 'm', bodyBytes: 20_000, maxTokens: 1, targets, pricing }, NOW);
    assert.ok(!a.ok);
    assert.match(a.refusal.message, /its input alone is over the limit/);
  });

  it('a request that fits an empty window but not the current one is still the 429 it was', async () => {
    const store = new MemoryGovernanceStore();
    const first = await preCheck(store, policy, minute, { model: 'm', bodyBytes: 400, maxTokens: 2000, targets, pricing }, NOW);
    assert.ok(first.ok);
    const second = await preCheck(store, policy, minute, { model: 'm', bodyBytes: 400, maxTokens: 2000, targets, pricing }, NOW + 1);
    assert.ok(!second.ok);
    assert.equal(second.refusal.code, 'rate_limit_exceeded');
    assert.ok((second.refusal.retryAfterS ?? 0) >= 1);
  });
});

describe('governance.cap_output: the reserved cap is sent upstream', () => {
  const budget: Principal = { keyId: 'k-budget', team: 'budget' };
  const free: Principal = { keyId: 'k-free', team: 'free' };

  it('a request that sets no cap, under a budget, is reserved at default_max_tokens and that cap is sent', async () => {
    const a = await preCheck(
      new MemoryGovernanceStore(),
      capping,
      budget,
      { model: 'm', bodyBytes: 400, maxTokens: null, targets, pricing },
      NOW,
    );
    assert.ok(a.ok);
    assert.equal(a.outputCap, 4096);
  });

  it('under a tpm its default would not fit, it is capped to what the limit holds beside its input, not refused', async () => {
    const store = new MemoryGovernanceStore();
    const a = await preCheck(store, capping, minute, { model: 'm', bodyBytes: 400, maxTokens: null, targets, pricing }, NOW);
    assert.ok(a.ok, 'admitted, capped');
    assert.equal(a.outputCap, 2900);
    const full = await preCheck(store, capping, minute, { model: 'm', bodyBytes: 400, maxTokens: null, targets, pricing }, NOW + 1);
    assert.ok(!full.ok, 'the window is full now: the cap was reserved');
    assert.equal(full.refusal.code, 'rate_limit_exceeded');
  });

  it("the tightest scope decides the cap: a key's tpm under its team's daily quota", async () => {
    const a = await preCheck(
      new MemoryGovernanceStore(),
      capping,
      day,
      { model: 'm', bodyBytes: 40, maxTokens: null, targets, pricing },
      NOW,
    );
    assert.ok(a.ok);
    assert.equal(a.outputCap, 90);
  });

  it('a request that sets its own cap keeps it: nothing is sent, and one over a limit is still refused', async () => {
    const own = await preCheck(
      new MemoryGovernanceStore(),
      capping,
      budget,
      { model: 'm', bodyBytes: 400, maxTokens: 50, targets, pricing },
      NOW,
    );
    assert.ok(own.ok);
    assert.equal(own.outputCap, null);
    const over = await preCheck(
      new MemoryGovernanceStore(),
      capping,
      minute,
      { model: 'm', bodyBytes: 400, maxTokens: 5000, targets, pricing },
      NOW,
    );
    assert.ok(!over.ok);
    assert.equal(over.refusal.code, 'over_limit_capacity');
  });

  it('a caller with no limit, or cap_output off, has nothing sent', async () => {
    const open = await preCheck(
      new MemoryGovernanceStore(),
      capping,
      free,
      { model: 'm', bodyBytes: 400, maxTokens: null, targets, pricing },
      NOW,
    );
    assert.ok(open.ok);
    assert.equal(open.outputCap, null);
    const off = await preCheck(
      new MemoryGovernanceStore(),
      policy,
      budget,
      { model: 'm', bodyBytes: 400, maxTokens: null, targets, pricing },
      NOW,
    );
    assert.ok(off.ok);
    assert.equal(off.outputCap, null);
  });
});
