import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { GovernanceStore, Limits, Scope } from '../../src/governance/index.js';

// The behaviour every GovernanceStore shows, run against memory and redis alike. Time is an
// injected number (nowMs), never the wall clock.

export interface StoreFixture {
  /** A fresh store with its own counters (a new key prefix for redis). */
  fresh(options?: { reservationTtlMs?: number }): Promise<GovernanceStore>;
  /** A second store over the same counters as `store` (another replica), or null when the backend is per process. */
  peer(store: GovernanceStore): Promise<GovernanceStore | null>;
  cleanup(): Promise<void>;
}

/** 2026-11-15T12:00:00Z. */
const T0 = Date.UTC(2026, 10, 15, 12, 0, 0);

function team(limits: Limits, id = 'platform'): Scope {
  return { kind: 'team', id, team: id, limits };
}

function key(limits: Limits, id = 'ci-bot', teamId = 'platform'): Scope {
  return { kind: 'key', id, team: teamId, limits };
}

export function storeSuite(name: string, fixture: StoreFixture): void {
  describe(`GovernanceStore contract: ${name}`, () => {
    after(() => fixture.cleanup());

    it('RPM admits at most the limit in any 60 s span (a sliding log, not a refilling bucket)', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ rpm: 3 })];
      const at = async (ms: number) => (await store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: T0 + ms })).ok;
      assert.equal(await at(0), true);
      assert.equal(await at(30_000), true);
      assert.equal(await at(59_000), true);
      assert.equal(await at(59_999), false, 'three in the last 60 s');
      assert.equal(await at(60_000), true, 'the request at 0 left the window');
      assert.equal(await at(60_001), false, 'a bucket would have refilled here; the log still holds 30 s, 59 s, 60 s');
      const refused = await store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: T0 + 61_000 });
      assert.equal(refused.ok, false);
      if (!refused.ok) {
        assert.equal(refused.refusal.code, 'rate_limit_exceeded');
        assert.equal(refused.refusal.limit, 'rpm');
        assert.equal(refused.refusal.retryAfterS, 29, 'the request at 30 s leaves at 90 s');
        assert.deepEqual(refused.refusal.rateLimit.requests, { limit: 3, remaining: 0, resetMs: 29_000 });
      }
    });

    it('over a long run the window stays exact: the store admits what a naive sliding log admits', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ rpm: 700, tpm: 9000 })];
      const admittedAt: Array<{ at: number; tokens: number }> = [];
      let mismatches = 0;
      for (let i = 0; i < 3000; i += 1) {
        const at = T0 + i * 40;
        const tokens = 1 + (i % 17);
        const live = admittedAt.filter((e) => e.at > at - 60_000);
        const expected = live.length + 1 <= 700 && live.reduce((sum, e) => sum + e.tokens, 0) + tokens <= 9000;
        const r = await store.reserve({ scopes, tokens, costMicroUsd: 0, nowMs: at });
        if (r.ok !== expected) mismatches += 1;
        if (r.ok) admittedAt.push({ at, tokens });
      }
      assert.equal(mismatches, 0);
      assert.ok(admittedAt.length > 1000 && admittedAt.length < 3000, `admitted ${admittedAt.length}`);
    });

    it('TPM sums the tokens of the last 60 s and says when enough of them expire', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ tpm: 100 })];
      assert.equal((await store.reserve({ scopes, tokens: 40, costMicroUsd: 0, nowMs: T0 })).ok, true);
      assert.equal((await store.reserve({ scopes, tokens: 40, costMicroUsd: 0, nowMs: T0 + 10_000 })).ok, true);
      const refused = await store.reserve({ scopes, tokens: 40, costMicroUsd: 0, nowMs: T0 + 20_000 });
      assert.equal(refused.ok, false);
      if (!refused.ok) {
        assert.equal(refused.refusal.limit, 'tpm');
        assert.equal(refused.refusal.retryAfterS, 40, 'the first 40 tokens leave at 60 s');
      }
      assert.equal(
        (await store.reserve({ scopes, tokens: 20, costMicroUsd: 0, nowMs: T0 + 20_000 })).ok,
        true,
        'exactly at the limit is admitted',
      );
      assert.equal((await store.reserve({ scopes, tokens: 40, costMicroUsd: 0, nowMs: T0 + 60_000 })).ok, true);
    });

    it('a pre-check is all-or-nothing: a refusal by the key leaves the team counters untouched', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ rpm: 10, tpm: 1000, tokensPerDay: 1000, budgetMicroUsdPerMonth: 1000 }), key({ rpm: 1 })];
      assert.equal((await store.reserve({ scopes, tokens: 10, costMicroUsd: 5, nowMs: T0 })).ok, true);
      const refused = await store.reserve({ scopes, tokens: 10, costMicroUsd: 5, nowMs: T0 + 1 });
      assert.equal(refused.ok, false);
      if (!refused.ok) assert.deepEqual(refused.refusal.scope, { kind: 'key', id: 'ci-bot' });
      const [t, k] = await store.status(scopes, T0 + 2);
      assert.equal(t?.requestsThisMinute.used, 1);
      assert.equal(t?.tokensThisMinute.used, 10);
      assert.equal(t?.tokensToday.used, 10);
      assert.equal(t?.spendThisMonthMicroUsd.reservedMicroUsd, 5);
      assert.equal(k?.requestsThisMinute.used, 1);
      assert.equal(k?.spendThisMonthMicroUsd.reservedMicroUsd, 0, 'a scope without a budget reserves nothing');
    });

    it('checks the team before the key, and RPM, TPM, day quota, budget in that order', async () => {
      const store = await fixture.fresh();
      const first = await store.reserve({ scopes: [team({ rpm: 0 }), key({ rpm: 0 })], tokens: 1, costMicroUsd: 0, nowMs: T0 });
      assert.equal(first.ok, false);
      if (!first.ok) assert.deepEqual([first.refusal.scope?.kind, first.refusal.limit], ['team', 'rpm']);
      const quota = await store.reserve({
        scopes: [team({ tokensPerDay: 5, budgetMicroUsdPerMonth: 0 }, 'q')],
        tokens: 10,
        costMicroUsd: 10,
        nowMs: T0,
      });
      assert.equal(quota.ok, false);
      if (!quota.ok) assert.deepEqual([quota.refusal.code, quota.refusal.limit], ['quota_exceeded', 'tokens_per_day']);
      const budget = await store.reserve({
        scopes: [team({ tokensPerDay: 50, budgetMicroUsdPerMonth: 5 }, 'b')],
        tokens: 10,
        costMicroUsd: 10,
        nowMs: T0,
      });
      assert.equal(budget.ok, false);
      if (!budget.ok) assert.deepEqual([budget.refusal.code, budget.refusal.limit], ['budget_exceeded', 'budget']);
    });

    it('a budget refusal says how much was left (budget minus spent minus reserved), and "no budget left" only when nothing is', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ budgetMicroUsdPerMonth: 1000 }, 'left')];
      const spent = await store.reserve({ scopes, tokens: 1, costMicroUsd: 200, nowMs: T0 });
      assert.ok(spent.ok);
      await store.settle(spent.reservation, { tokens: 1, costMicroUsd: 150 }, T0 + 1);
      assert.ok((await store.reserve({ scopes, tokens: 1, costMicroUsd: 300, nowMs: T0 + 2 })).ok, 'held in flight');
      const over = await store.reserve({ scopes, tokens: 1, costMicroUsd: 600, nowMs: T0 + 3 });
      assert.ok(!over.ok);
      assert.deepEqual(over.refusal.budget, { limitMicroUsd: 1000, leftMicroUsd: 550 });
      assert.equal(
        over.refusal.message,
        'team "left" has 0.00055 USD left of its budget of 0.001 USD this UTC month, less than this request reserves',
      );
      assert.ok((await store.reserve({ scopes, tokens: 1, costMicroUsd: 550, nowMs: T0 + 4 })).ok, 'what was left fits exactly');
      const none = await store.reserve({ scopes, tokens: 1, costMicroUsd: 1, nowMs: T0 + 5 });
      assert.ok(!none.ok);
      assert.deepEqual(none.refusal.budget, { limitMicroUsd: 1000, leftMicroUsd: 0 });
      assert.match(
        none.refusal.message,
        /^team "left" has no budget left this UTC month: its budget of 0\.001 USD is spent or reserved by requests in flight/,
      );
    });

    it('settle replaces the worst-case reservation with the actual cost and tokens; release gives it back', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ budgetMicroUsdPerMonth: 1000 })];
      const a = await store.reserve({ scopes, tokens: 100, costMicroUsd: 600, nowMs: T0 });
      assert.ok(a.ok);
      assert.equal((await store.reserve({ scopes, tokens: 100, costMicroUsd: 600, nowMs: T0 + 1 })).ok, false, '600 reserved + 600 > 1000');
      await store.settle(a.reservation, { tokens: 30, costMicroUsd: 100 }, T0 + 2);
      let [s] = await store.status(scopes, T0 + 3);
      assert.deepEqual(s?.spendThisMonthMicroUsd, { used: 100, reservedMicroUsd: 0, limit: 1000 });
      assert.equal(s?.tokensThisMinute.used, 30, 'TPM trued up to the actual tokens');
      assert.equal(s?.tokensToday.used, 30, 'the day trued up too');
      const b = await store.reserve({ scopes, tokens: 100, costMicroUsd: 600, nowMs: T0 + 4 });
      assert.ok(b.ok, '100 spent + 600 fits');
      await store.release(b.reservation, T0 + 5);
      [s] = await store.status(scopes, T0 + 6);
      assert.deepEqual(s?.spendThisMonthMicroUsd, { used: 100, reservedMicroUsd: 0, limit: 1000 });
      assert.equal(s?.tokensToday.used, 30);
      assert.equal(s?.requestsThisMinute.used, 2, 'a released request still counts as a request');
    });

    it('invariant "no store accepts a negative settle": a negative actual refunds nothing, and spend and tokens never fall below zero', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ budgetMicroUsdPerMonth: 1000, tpm: 10_000, tokensPerDay: 10_000 }), key({})];
      const a = await store.reserve({ scopes, tokens: 100, costMicroUsd: 300, nowMs: T0 });
      assert.ok(a.ok);
      await store.settle(a.reservation, { tokens: 40, costMicroUsd: 200 }, T0 + 1);
      const b = await store.reserve({ scopes, tokens: 100, costMicroUsd: 300, nowMs: T0 + 2 });
      assert.ok(b.ok);
      await store.settle(b.reservation, { tokens: -1e8, costMicroUsd: -99_999_994 }, T0 + 3);
      let [t, k] = await store.status(scopes, T0 + 4);
      for (const s of [t, k]) {
        assert.deepEqual(s?.spendThisMonthMicroUsd.used, 200, `${s?.kind}: the earlier spend stays, the negative one adds nothing`);
        assert.equal(s?.tokensThisMinute.used, 40, `${s?.kind}: the window keeps the earlier tokens`);
        assert.equal(s?.tokensToday.used, 40, `${s?.kind}: so does the day`);
        assert.equal(s?.requestsThisMinute.used, 2, `${s?.kind}: the request still counts`);
      }
      assert.equal(t?.spendThisMonthMicroUsd.reservedMicroUsd, 0, 'the reservation was given back');
      // Alone in a fresh store, a negative settle leaves the books at zero, not below.
      const fresh = await fixture.fresh();
      const c = await fresh.reserve({ scopes, tokens: 10, costMicroUsd: 5, nowMs: T0 });
      assert.ok(c.ok);
      await fresh.settle(c.reservation, { tokens: -1e18, costMicroUsd: -1e12 }, T0 + 1);
      [t, k] = await fresh.status(scopes, T0 + 2);
      for (const s of [t, k]) {
        assert.deepEqual(
          [s?.spendThisMonthMicroUsd.used, s?.tokensThisMinute.used, s?.tokensToday.used],
          [0, 0, 0],
          `${s?.kind}: ${JSON.stringify(s)}`,
        );
      }
      const d = await fresh.reserve({ scopes, tokens: 10, costMicroUsd: 1000, nowMs: T0 + 3 });
      assert.ok(d.ok, 'the whole budget is still there');
      const e = await fresh.reserve({ scopes, tokens: 10, costMicroUsd: 1, nowMs: T0 + 4 });
      assert.equal(e.ok, false, 'and no more than the whole budget: nothing was refunded');
    });

    it("a settled request's true-up leaves the window with it, and RPM's wait counts requests only", async () => {
      const store = await fixture.fresh();
      const scopes = [team({ rpm: 2, tpm: 1000 })];
      const a = await store.reserve({ scopes, tokens: 300, costMicroUsd: 0, nowMs: T0 });
      assert.ok(a.ok);
      await store.settle(a.reservation, { tokens: 120, costMicroUsd: 0 }, T0 + 10);
      const b = await store.reserve({ scopes, tokens: 300, costMicroUsd: 0, nowMs: T0 + 1000 });
      assert.ok(b.ok);
      await store.settle(b.reservation, { tokens: 400, costMicroUsd: 0 }, T0 + 1010);
      let [s] = await store.status(scopes, T0 + 2000);
      assert.equal(s?.tokensThisMinute.used, 520, '120 + 400: both trued up');
      const refused = await store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: T0 + 2000 });
      assert.equal(refused.ok, false);
      if (!refused.ok) assert.equal(refused.refusal.retryAfterS, 58, 'the first request leaves at T0 + 60 s');
      [s] = await store.status(scopes, T0 + 60_000);
      assert.equal(s?.tokensThisMinute.used, 400, 'the first request left with its actual tokens');
      [s] = await store.status(scopes, T0 + 61_000);
      assert.deepEqual([s?.tokensThisMinute.used, s?.requestsThisMinute.used], [0, 0]);
    });

    it('50 concurrent reservations against a budget that fits 10 admit exactly 10', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ budgetMicroUsdPerMonth: 10 * 1234 }), key({})];
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => store.reserve({ scopes, tokens: 10, costMicroUsd: 1234, nowMs: T0 + i })),
      );
      assert.equal(results.filter((r) => r.ok).length, 10);
      for (const r of results) if (!r.ok) assert.equal(r.refusal.code, 'budget_exceeded');
    });

    it('a limit changed between calls (a reload) keeps the counter, which is keyed by id', async () => {
      const store = await fixture.fresh();
      for (let i = 0; i < 3; i += 1)
        assert.ok((await store.reserve({ scopes: [team({ rpm: 5 })], tokens: 1, costMicroUsd: 0, nowMs: T0 + i })).ok);
      assert.equal(
        (await store.reserve({ scopes: [team({ rpm: 3 })], tokens: 1, costMicroUsd: 0, nowMs: T0 + 10 })).ok,
        false,
        'lowered to 3: already used',
      );
      assert.ok((await store.reserve({ scopes: [team({ rpm: 4 })], tokens: 1, costMicroUsd: 0, nowMs: T0 + 11 })).ok);
      const [s] = await store.status([team({ rpm: 4 })], T0 + 12);
      assert.deepEqual(s?.requestsThisMinute, { used: 4, limit: 4 });
    });

    it('the daily quota resets at UTC midnight and the monthly budget on the 1st (UTC)', async () => {
      const store = await fixture.fresh();
      const beforeMidnight = Date.UTC(2026, 10, 30, 23, 59, 59, 999);
      const scopes = [team({ tokensPerDay: 100, budgetMicroUsdPerMonth: 500 })];
      const a = await store.reserve({ scopes, tokens: 100, costMicroUsd: 500, nowMs: beforeMidnight - 120_000 });
      assert.ok(a.ok);
      await store.settle(a.reservation, { tokens: 100, costMicroUsd: 500 }, beforeMidnight - 60_000);
      const refused = await store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: beforeMidnight });
      assert.equal(refused.ok, false);
      if (!refused.ok) assert.deepEqual([refused.refusal.code, refused.refusal.retryAfterS], ['quota_exceeded', 1]);
      const nextMonth = beforeMidnight + 1;
      const b = await store.reserve({ scopes, tokens: 100, costMicroUsd: 500, nowMs: nextMonth });
      assert.ok(b.ok, 'a new UTC day and month');
      const [s] = await store.status(scopes, nextMonth);
      assert.equal(s?.tokensToday.used, 100);
      assert.deepEqual(s?.spendThisMonthMicroUsd, { used: 0, reservedMicroUsd: 500, limit: 500 });
    });

    it('on_exceeded: warn admits a request over budget and names the scope', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ budgetMicroUsdPerMonth: 100, budgetOnExceeded: 'warn' }), key({ budgetMicroUsdPerMonth: 1000 })];
      const r = await store.reserve({ scopes, tokens: 1, costMicroUsd: 200, nowMs: T0 });
      assert.ok(r.ok);
      assert.deepEqual(r.budgetWarnings, [{ kind: 'team', id: 'platform', team: 'platform' }]);
    });

    it('an admitted request reports the tightest remaining requests and tokens', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ rpm: 100, tpm: 50 }), key({ rpm: 2, tpm: 1000 })];
      const r = await store.reserve({ scopes, tokens: 20, costMicroUsd: 0, nowMs: T0 });
      assert.ok(r.ok);
      assert.deepEqual(r.rateLimit, {
        requests: { limit: 2, remaining: 1, resetMs: 60_000 },
        tokens: { limit: 50, remaining: 30, resetMs: 60_000 },
      });
    });

    it('a reservation nobody settles (a crashed replica) is given back after its time to live', async () => {
      const store = await fixture.fresh({ reservationTtlMs: 120_000 });
      const scopes = [team({ budgetMicroUsdPerMonth: 100 })];
      assert.ok((await store.reserve({ scopes, tokens: 1, costMicroUsd: 100, nowMs: T0 })).ok);
      assert.equal((await store.reserve({ scopes, tokens: 1, costMicroUsd: 100, nowMs: T0 + 119_999 })).ok, false);
      assert.ok((await store.reserve({ scopes, tokens: 1, costMicroUsd: 100, nowMs: T0 + 120_000 })).ok);
    });

    it('reserves asked for at once are decided one after another, each against what the earlier ones took', async () => {
      const store = await fixture.fresh();
      const teamScope = team({ rpm: 5, budgetMicroUsdPerMonth: 1_000 });
      const ask = (keyId: string, keyRpm: number, nowMs: number) =>
        store.reserve({ scopes: [teamScope, key({ rpm: keyRpm }, keyId)], tokens: 1, costMicroUsd: 100, nowMs });
      // Twelve at once, two keys of one team, across two milliseconds: the team's rpm of 5 and
      // the first key's rpm of 2 decide, in the order asked.
      const asked = [
        ...Array.from({ length: 4 }, () => ask('a', 2, T0)),
        ...Array.from({ length: 4 }, () => ask('b', 100, T0)),
        ...Array.from({ length: 4 }, () => ask('b', 100, T0 + 1)),
      ];
      const results = await Promise.all(asked);
      assert.deepEqual(
        results.map((r) => r.ok),
        [true, true, false, false, true, true, true, false, false, false, false, false],
      );
      const refusal = results[2];
      assert.ok(refusal !== undefined && !refusal.ok);
      assert.equal(refusal.refusal.limit, 'rpm');
      assert.deepEqual(refusal.refusal.scope, { kind: 'key', id: 'a' });
      const last = results[11];
      assert.ok(last !== undefined && !last.ok);
      assert.deepEqual(last.refusal.scope, { kind: 'team', id: 'platform' });
      assert.equal(last.refusal.rateLimit.requests?.remaining, 0);
      const admitted = results.filter((r) => r.ok);
      assert.equal(new Set(admitted.map((r) => (r.ok ? r.reservation.id : ''))).size, 5, 'each admitted request has its own reservation');
      // 5 x 100 reserved of 1,000: five more fit the budget once the window has room.
      const later = await Promise.all(Array.from({ length: 6 }, () => ask('b', 100, T0 + 61_000)));
      assert.deepEqual(
        later.map((r) => (r.ok ? 'ok' : r.refusal.limit)),
        ['ok', 'ok', 'ok', 'ok', 'ok', 'rpm'],
      );
    });

    it('reserves asked for while earlier ones are still being decided keep their order, and none is lost', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ rpm: 23 })];
      // Five turns of the event loop, ten reserves each: the redis store has sent the first
      // turn's batch and holds the later ones until it is answered (a group commit).
      const asked: Array<Promise<boolean>> = [];
      for (let turn = 0; turn < 5; turn += 1) {
        for (let i = 0; i < 10; i += 1)
          asked.push(Promise.resolve(store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: T0 + turn })).then((r) => r.ok));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const results = await Promise.all(asked);
      assert.deepEqual(
        results,
        results.map((_, i) => i < 23),
        'the first 23 asked are admitted',
      );
      const [s] = await store.status(scopes, T0 + 10);
      assert.equal(s?.requestsThisMinute.used, 23);
    });

    it('a budget asked for by many at once, when nothing is reserved, admits exactly what fits', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ budgetMicroUsdPerMonth: 3 * 1_000 }), key({})];
      // One request settled at no cost leaves nothing reserved (redis: the resv key is gone).
      const first = await store.reserve({ scopes, tokens: 1, costMicroUsd: 1_000, nowMs: T0 });
      assert.ok(first.ok);
      await store.settle(first.reservation, { tokens: 1, costMicroUsd: 0 }, T0);
      // Then six at once (one batch for the redis store): the fourth's refusal looks for
      // expired reservations while the first three are not yet written, and counts them.
      const results = await Promise.all(
        Array.from({ length: 6 }, () => Promise.resolve(store.reserve({ scopes, tokens: 1, costMicroUsd: 1_000, nowMs: T0 + 1 }))),
      );
      assert.deepEqual(
        results.map((r) => r.ok),
        [true, true, true, false, false, false],
      );
    });

    it('a long-open reservation stays reserved while thousands after it are settled', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ budgetMicroUsdPerMonth: 10_000 })];
      const first = await store.reserve({ scopes, tokens: 1, costMicroUsd: 5_000, nowMs: T0 });
      assert.ok(first.ok);
      for (let i = 0; i < 2500; i += 1) {
        const r = await store.reserve({ scopes, tokens: 1, costMicroUsd: 4_000, nowMs: T0 + i });
        assert.ok(r.ok, `reservation ${i} fits beside the open one`);
        await store.settle(r.reservation, { tokens: 1, costMicroUsd: 0 }, T0 + i);
      }
      // 5,000 still reserved by the first: another 5,001 does not fit, 5,000 does.
      assert.equal((await store.reserve({ scopes, tokens: 1, costMicroUsd: 5_001, nowMs: T0 + 3000 })).ok, false);
      await store.settle(first.reservation, { tokens: 1, costMicroUsd: 1_000 }, T0 + 3000);
      const after = await store.reserve({ scopes, tokens: 1, costMicroUsd: 9_000, nowMs: T0 + 3001 });
      assert.ok(after.ok, 'settling the first gave back what it had reserved beyond its cost');
    });

    it('a settle after its reservation left the window trues up the day, never the window it has left', async () => {
      const store = await fixture.fresh();
      const scopes = [team({ tpm: 508, tokensPerDay: 10_000 })];
      const long = await store.reserve({ scopes, tokens: 79, costMicroUsd: 0, nowMs: T0 });
      assert.ok(long.ok);
      assert.ok((await store.reserve({ scopes, tokens: 17, costMicroUsd: 0, nowMs: T0 + 60_500 })).ok);
      // The long request ends after a minute and used nothing of its 79.
      await store.settle(long.reservation, { tokens: 0, costMicroUsd: 0 }, T0 + 61_000);
      let [s] = await store.status(scopes, T0 + 61_001);
      assert.deepEqual([s?.tokensThisMinute.used, s?.tokensToday.used], [17, 17]);
      [s] = await store.status(scopes, T0 + 121_000);
      assert.deepEqual([s?.tokensThisMinute.used, s?.tokensToday.used], [0, 17], 'and nothing is left behind when the rest leaves');
    });

    it('two stores over the same backend see one window (replicas)', async (t) => {
      const a = await fixture.fresh();
      const b = await fixture.peer(a);
      if (b === null) return t.skip('the memory store is per process');
      const scopes = [team({ rpm: 30 })];
      let admitted = 0;
      for (let i = 0; i < 60; i += 1) {
        const store = i % 2 === 0 ? a : b;
        if ((await store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: T0 + i * 500 })).ok) admitted += 1;
      }
      assert.equal(admitted, 30, '60 requests within 30 s across both: exactly 30');
    });
  });
}
