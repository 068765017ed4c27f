import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import {
  ANONYMOUS,
  admitToolCall,
  buildGovernancePolicy,
  checkTool,
  createGovernanceStore,
  finishToolCall,
  type GovernancePolicy,
  type GovernanceStore,
  hashKey,
  type KeyRecord,
  type Limits,
  MemoryGovernanceStore,
  mayUseTool,
  type Principal,
  preCheck,
  RedisGovernanceStore,
  type TeamRecord,
  type ToolAdmission,
} from '../../src/governance/index.js';
import { deleteKeysWithPrefix } from '../support/redis.js';

// The governance of /mcp's tools/call: the allow-lists (a key narrows its team), and the
// tool-call counters kept beside the model counters under `<id>/tools` (rpm in a window of
// their own, tool_calls_per_day), admitted, settled or released against both stores. Time is
// injected; the Redis store runs on the caller's clock against the shared Redis on
// 127.0.0.1:6379, under a key prefix of its own, removed afterwards.

const NOW = Date.UTC(2026, 10, 15, 12, 0, 0);
const REDIS_URL = 'redis://127.0.0.1:6379';
const RUN_PREFIX = `switchyard-test:${process.pid}:${randomUUID()}:tools:`;

function key(id: string, team: string, limits: Limits = {}, allowedTools?: string[]): KeyRecord {
  return { id, team, sha256: [hashKey(`sk-${id}`)], limits, expiresAtMs: null, ...(allowedTools ? { allowedTools } : {}) };
}

function policyOf(teams: TeamRecord[], keys: KeyRecord[]): GovernancePolicy {
  return buildGovernancePolicy({ teams, keys, defaultMaxTokens: 16, onMissingPrice: 'allow' });
}

/** One model request, as the chat path admits it: the key's model counters, not its tool-call ones. */
async function modelRequest(store: GovernanceStore, policy: GovernancePolicy, principal: Principal, nowMs: number) {
  return preCheck(store, policy, principal, { model: 'm', bodyBytes: 8, maxTokens: 4, targets: [], pricing: {} }, nowMs);
}

function refused(admission: ToolAdmission) {
  assert.equal(admission.ok, false, 'refused');
  return (admission as Extract<ToolAdmission, { ok: false }>).refusal;
}

function admitted(admission: ToolAdmission) {
  assert.equal(admission.ok, true, `admitted${admission.ok ? '' : `, not refused: ${admission.refusal.message}`}`);
  return admission as Extract<ToolAdmission, { ok: true }>;
}

describe('tool allow-lists', () => {
  const policy = policyOf(
    [
      { id: 'limited', allowedTools: ['echo', 'b_*'], limits: {} },
      { id: 'open', limits: {} },
    ],
    [key('narrow', 'limited', {}, ['b_*']), key('wide', 'limited', {}, ['*']), key('plain', 'limited'), key('free', 'open')],
  );
  const narrow: Principal = { keyId: 'narrow', team: 'limited' };
  const wide: Principal = { keyId: 'wide', team: 'limited' };
  const plain: Principal = { keyId: 'plain', team: 'limited' };
  const free: Principal = { keyId: 'free', team: 'open' };

  it("a team's globs bound every key of it; a key without its own list gets the team's", () => {
    assert.equal(checkTool(policy, plain, 'echo'), null);
    assert.equal(checkTool(policy, plain, 'b_weather'), null);
    const denied = checkTool(policy, plain, 'weather');
    assert.equal(denied?.code, 'tool_not_allowed');
    assert.deepEqual(denied?.scope, { kind: 'team', id: 'limited' });
    assert.equal(denied?.message, 'team "limited" may not use tool "weather"');
    assert.equal(denied?.limit, null);
    assert.equal(denied?.retryAfterS, null);
  });

  it("a key's globs narrow its team's, and never widen them", () => {
    assert.equal(checkTool(policy, narrow, 'b_echo'), null);
    const byKey = checkTool(policy, narrow, 'echo');
    assert.equal(byKey?.code, 'tool_not_allowed');
    assert.deepEqual(byKey?.scope, { kind: 'key', id: 'narrow' });
    assert.equal(byKey?.message, 'key "narrow" may not use tool "echo"');
    assert.equal(checkTool(policy, wide, 'echo'), null);
    assert.deepEqual(checkTool(policy, wide, 'weather')?.scope, { kind: 'team', id: 'limited' }, "the team's list still holds");
  });

  it('a team without allowed_tools, and the anonymous caller, may use every tool', () => {
    assert.equal(checkTool(policy, free, 'anything'), null);
    assert.equal(checkTool(policy, ANONYMOUS, 'anything'), null);
  });

  it('mayUseTool (what tools/list shows) answers as checkTool does', () => {
    for (const principal of [narrow, wide, plain, free, ANONYMOUS])
      for (const tool of ['echo', 'b_echo', 'weather'])
        assert.equal(mayUseTool(policy, principal, tool), checkTool(policy, principal, tool) === null, `${principal.keyId} ${tool}`);
  });

  it('admitToolCall refuses a tool not allowed before counting anything', async () => {
    const store = new MemoryGovernanceStore();
    const counted = policyOf([{ id: 'limited', allowedTools: ['echo'], limits: {} }], [key('k', 'limited', { toolCallsPerDay: 1 })]);
    const k: Principal = { keyId: 'k', team: 'limited' };
    assert.equal(refused(await admitToolCall(store, counted, k, 'weather', NOW)).code, 'tool_not_allowed');
    admitted(await admitToolCall(store, counted, k, 'echo', NOW));
  });
});

interface StoreFixture {
  /** A fresh store with no counters, or a reason to skip. */
  fresh(): Promise<GovernanceStore | string>;
}

function toolCallSuite(name: string, fixture: StoreFixture): void {
  describe(`tool-call counters (${name} store)`, () => {
    const teams: TeamRecord[] = [
      { id: 'eng', limits: {} },
      { id: 'capped', limits: { toolCallsPerDay: 2 } },
    ];
    const k: Principal = { keyId: 'k', team: 'eng' };
    const c: Principal = { keyId: 'c', team: 'capped' };

    it('tool_calls_per_day refuses the call past the quota as quota_exceeded, naming tool calls and the plain key id', async (t) => {
      const store = await fixture.fresh();
      if (typeof store === 'string') return t.skip(store);
      const policy = policyOf(teams, [key('k', 'eng', { toolCallsPerDay: 2 })]);
      for (let i = 0; i < 2; i += 1) {
        const ok = admitted(await admitToolCall(store, policy, k, 'echo', NOW + i));
        assert.notEqual(ok.reservation, null, 'a counted call holds a reservation');
        await finishToolCall(store, ok.reservation, true, NOW + i);
      }
      const refusal = refused(await admitToolCall(store, policy, k, 'echo', NOW + 10));
      assert.equal(refusal.code, 'quota_exceeded');
      assert.equal(refusal.limit, 'tool_calls_per_day');
      assert.deepEqual(refusal.scope, { kind: 'key', id: 'k' });
      assert.match(refusal.message, /tool calls/);
      assert.match(refusal.message, /key "k"/);
      assert.doesNotMatch(refusal.message, /\/tools/);
      assert.ok(refusal.retryAfterS !== null && refusal.retryAfterS >= 1, 'retry after the UTC day turns');
      const tomorrow = Date.UTC(2026, 10, 16, 0, 0, 1);
      admitted(await admitToolCall(store, policy, k, 'echo', tomorrow));
    });

    it("a team's tool_calls_per_day counts every key of it and names the plain team id", async (t) => {
      const store = await fixture.fresh();
      if (typeof store === 'string') return t.skip(store);
      const policy = policyOf(teams, [key('c', 'capped'), key('d', 'capped')]);
      const d: Principal = { keyId: 'd', team: 'capped' };
      for (const [i, p] of [c, d].entries()) {
        const ok = admitted(await admitToolCall(store, policy, p, 'echo', NOW + i));
        await finishToolCall(store, ok.reservation, true, NOW + i);
      }
      const refusal = refused(await admitToolCall(store, policy, c, 'echo', NOW + 10));
      assert.equal(refusal.code, 'quota_exceeded');
      assert.equal(refusal.limit, 'tool_calls_per_day');
      assert.deepEqual(refusal.scope, { kind: 'team', id: 'capped' });
      assert.match(refusal.message, /team "capped" .*tool calls/);
      assert.doesNotMatch(refusal.message, /\/tools/);
    });

    it('a call that reached no server is given back; one that did stays counted', async (t) => {
      const store = await fixture.fresh();
      if (typeof store === 'string') return t.skip(store);
      const policy = policyOf(teams, [key('k', 'eng', { toolCallsPerDay: 1 })]);
      const first = admitted(await admitToolCall(store, policy, k, 'echo', NOW));
      await finishToolCall(store, first.reservation, false, NOW + 1);
      const second = admitted(await admitToolCall(store, policy, k, 'echo', NOW + 2));
      await finishToolCall(store, second.reservation, true, NOW + 3);
      assert.equal(refused(await admitToolCall(store, policy, k, 'echo', NOW + 4)).limit, 'tool_calls_per_day');
    });

    it('rpm counts tool calls in a window apart from model requests: neither uses up the other', async (t) => {
      const store = await fixture.fresh();
      if (typeof store === 'string') return t.skip(store);
      const policy = policyOf(teams, [key('k', 'eng', { rpm: 2 }), key('m', 'eng', { rpm: 2 })]);
      // Tool calls first: two fill the tool window, and the key's model window stays empty.
      for (let i = 0; i < 2; i += 1) {
        const ok = admitted(await admitToolCall(store, policy, k, 'echo', NOW + i));
        await finishToolCall(store, ok.reservation, true, NOW + i);
      }
      const overRpm = refused(await admitToolCall(store, policy, k, 'echo', NOW + 10));
      assert.equal(overRpm.code, 'rate_limit_exceeded');
      assert.equal(overRpm.limit, 'rpm');
      assert.deepEqual(overRpm.scope, { kind: 'key', id: 'k' });
      assert.match(overRpm.message, /key "k" .*tool calls per minute/);
      assert.doesNotMatch(overRpm.message, /\/tools/);
      for (let i = 0; i < 2; i += 1) assert.equal((await modelRequest(store, policy, k, NOW + 20 + i)).ok, true, 'model request admitted');
      // Model requests first: two fill the model window, and tool calls are still admitted.
      const m: Principal = { keyId: 'm', team: 'eng' };
      for (let i = 0; i < 2; i += 1) assert.equal((await modelRequest(store, policy, m, NOW + i)).ok, true);
      assert.equal((await modelRequest(store, policy, m, NOW + 10)).ok, false, 'the model window is full');
      for (let i = 0; i < 2; i += 1) admitted(await admitToolCall(store, policy, m, 'echo', NOW + 20 + i));
      // A minute on, the tool window admits again.
      admitted(await admitToolCall(store, policy, k, 'echo', NOW + 60_001));
    });

    // Both stores keep `<team>/tools` in counters of its own (the Redis store names a team's
    // other scopes by their id), never in the team's model counters.
    it("a team's rpm counts tool calls apart from its model requests", async (t) => {
      const store = await fixture.fresh();
      if (typeof store === 'string') return t.skip(store);
      const policy = policyOf([{ id: 'busy', limits: { rpm: 2 } }], [key('x', 'busy'), key('y', 'busy')]);
      const x: Principal = { keyId: 'x', team: 'busy' };
      const y: Principal = { keyId: 'y', team: 'busy' };
      for (let i = 0; i < 2; i += 1) assert.equal((await modelRequest(store, policy, x, NOW + i)).ok, true);
      assert.equal((await modelRequest(store, policy, y, NOW + 5)).ok, false, "the team's model window is full");
      for (let i = 0; i < 2; i += 1) admitted(await admitToolCall(store, policy, y, 'echo', NOW + 10 + i));
      const over = refused(await admitToolCall(store, policy, x, 'echo', NOW + 20));
      assert.deepEqual([over.limit, over.scope], ['rpm', { kind: 'team', id: 'busy' }]);
    });

    it("a team's tool_calls_per_day is not used up by its model tokens", async (t) => {
      const store = await fixture.fresh();
      if (typeof store === 'string') return t.skip(store);
      const policy = policyOf(teams, [key('c', 'capped')]);
      // A model request reserves (and counts for the day) 2 input + 4 output tokens, more than the 2 tool calls allowed.
      assert.equal((await modelRequest(store, policy, c, NOW)).ok, true);
      admitted(await admitToolCall(store, policy, c, 'echo', NOW + 1));
    });

    it('a key with no tool limits, and the anonymous caller, are admitted with nothing to settle', async (t) => {
      const store = await fixture.fresh();
      if (typeof store === 'string') return t.skip(store);
      const policy = policyOf(teams, [key('k', 'eng', { tpm: 1, budgetMicroUsdPerMonth: 1 })]);
      for (const principal of [k, ANONYMOUS]) {
        for (let i = 0; i < 3; i += 1) {
          const ok = admitted(await admitToolCall(store, policy, principal, 'echo', NOW + i));
          assert.equal(ok.reservation, null, 'tpm and budgets do not apply to tools');
          assert.deepEqual(ok.rateLimit, { requests: null, tokens: null });
          assert.equal(await finishToolCall(store, ok.reservation, true, NOW + i), undefined);
        }
      }
    });
  });
}

toolCallSuite('memory', {
  fresh: async () => createGovernanceStore({ store: 'memory' }, { onFailure: () => undefined }),
});

const opened: RedisGovernanceStore[] = [];
let redisReachable: boolean | undefined;

toolCallSuite('redis', {
  async fresh() {
    if (redisReachable === false) return `Redis at ${REDIS_URL} is not reachable`;
    const store = new RedisGovernanceStore({ url: REDIS_URL, keyPrefix: `${RUN_PREFIX}${randomUUID()}:`, clock: 'caller' });
    opened.push(store);
    redisReachable = await store.ready(3000);
    return redisReachable ? store : `Redis at ${REDIS_URL} is not reachable`;
  },
});

after(async () => {
  await Promise.all(opened.map((s) => s.close()));
  if (redisReachable === true) await deleteKeysWithPrefix(REDIS_URL, RUN_PREFIX);
});
