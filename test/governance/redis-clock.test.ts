import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { applyStoreErrorPolicy, RedisGovernanceStore, type Scope, type StoreFailure } from '../../src/governance/index.js';
import { utcDayStamp, utcMonthStamp } from '../../src/governance/limits.js';
import { freePort, startRedis, stopRedis } from '../support/redis.js';

// The redis store on Redis's own clock, against a private redis-server (CLIENT PAUSE below
// would stall every other test on the shared one): replicas whose clocks disagree still
// share one window, one day and one month, and a reserve that Redis runs after the gateway
// gave up on it (a paused Redis runs queued scripts later) leaves nothing behind.

const DAY_MS = 86_400_000;

describe('redis store on Redis clock', () => {
  let port: number;
  let redis: ChildProcess;
  let admin: Redis;
  const opened: RedisGovernanceStore[] = [];
  let prefixes = 0;

  const open = async (keyPrefix: string, commandTimeoutMs = 1000): Promise<RedisGovernanceStore> => {
    const store = new RedisGovernanceStore({ url: `redis://127.0.0.1:${port}`, keyPrefix, commandTimeoutMs });
    opened.push(store);
    assert.equal(await store.ready(5000), true);
    return store;
  };
  const prefix = (): string => `clock-${(prefixes += 1)}:`;

  before(async () => {
    port = await freePort();
    redis = await startRedis(port);
    admin = new Redis(`redis://127.0.0.1:${port}`);
  });

  after(async () => {
    await Promise.all(opened.map((s) => s.close()));
    admin.disconnect();
    await stopRedis(redis);
  });

  it("the scripts' UTC day and month of a millisecond are JavaScript's, across month ends, leap days and centuries", async () => {
    const common = readFileSync(new URL('../../src/governance/lua/common.lua', import.meta.url), 'utf8');
    const instants: number[] = [
      0,
      Date.UTC(1999, 11, 31, 23, 59, 59, 999),
      Date.UTC(2000, 1, 29, 12),
      Date.UTC(2100, 1, 28, 23, 59, 59, 999),
    ];
    for (let y = 2024; y <= 2029; y += 1) {
      for (let m = 0; m < 12; m += 1) {
        const start = Date.UTC(y, m, 1);
        instants.push(start - 1, start, start + DAY_MS - 1, Date.UTC(y, m, 15, 7, 30));
      }
    }
    const script = `${common}\nlocal out = {}\nfor i, v in ipairs(ARGV) do local d, m = utcStamps(tonumber(v)); out[#out + 1] = d .. '/' .. m end\nreturn out`;
    const got = (await admin.eval(script, 0, ...instants.map(String))) as string[];
    assert.deepEqual(
      got,
      instants.map((ms) => `${utcDayStamp(ms)}/${utcMonthStamp(ms)}`),
    );
  });

  it("replicas whose clocks are an hour, a day and a month apart share one window, one day and one month (each call's nowMs is ignored)", async () => {
    const p = prefix();
    const a = await open(p);
    const b = await open(p);
    const real = Date.now();
    const scopes: Scope[] = [
      { kind: 'team', id: 'platform', team: 'platform', limits: { rpm: 3, tokensPerDay: 100, budgetMicroUsdPerMonth: 90 } },
    ];
    const ask = (store: RedisGovernanceStore, skewMs: number) =>
      store.reserve({ scopes, tokens: 30, costMicroUsd: 30, nowMs: real + skewMs });
    assert.ok((await ask(a, 0)).ok);
    const ahead = await ask(b, 3_600_000 + DAY_MS);
    assert.ok(ahead.ok, 'a replica a day and an hour ahead books beside the first');
    // Both reservations were decided on Redis's clock: one day and one month.
    assert.equal(ahead.reservation.day, utcDayStamp(real));
    assert.ok(Math.abs(ahead.reservation.atMs - real) < 60_000, "the reservation's time is Redis's, not the replica's");
    const behind = await ask(b, -31 * DAY_MS);
    assert.ok(behind.ok, 'a replica a month behind books into the same month, not a fresh one');
    const [s] = await a.status(scopes, real - 2 * DAY_MS);
    assert.deepEqual(
      [
        s?.requestsThisMinute.used,
        s?.tokensToday.used,
        (s?.spendThisMonthMicroUsd.used ?? 0) + (s?.spendThisMonthMicroUsd.reservedMicroUsd ?? 0),
      ],
      [3, 90, 90],
      'one window, one day and one month hold all three',
    );
    const fourth = await ask(a, 0);
    assert.ok(!fourth.ok);
    assert.equal(fourth.refusal.limit, 'rpm');
    assert.ok((fourth.refusal.retryAfterS ?? 0) <= 60, `retry-after ${fourth.refusal.retryAfterS} is within the minute, not the skew`);
  });

  it('a reserve Redis runs after the gateway gave up on it (CLIENT PAUSE) reserves nothing: no budget room, rpm slot or day tokens held', async () => {
    const p = prefix();
    const store = await open(p, 300);
    const failures: StoreFailure[] = [];
    const closed = applyStoreErrorPolicy(store, 'fail_closed', (f) => failures.push(f));
    const scopes: Scope[] = [
      { kind: 'team', id: 'platform', team: 'platform', limits: { rpm: 2, tokensPerDay: 200, budgetMicroUsdPerMonth: 200 } },
    ];
    const ask = () => closed.reserve({ scopes, tokens: 100, costMicroUsd: 100, nowMs: Date.now() });
    const first = await ask();
    assert.ok(first.ok);
    // Writes (and so every script) wait 1.5 s; the store gives up after 300 ms.
    await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE');
    const paused = await ask();
    assert.ok(!paused.ok);
    assert.equal(paused.refusal.code, 'governance_unavailable');
    assert.deepEqual(
      failures.map((f) => f.operation),
      ['reserve'],
    );
    // Once the pause ends Redis runs the queued reserve; past its deadline, it writes nothing.
    await waitForUnpause(admin);
    const [s] = await store.status(scopes, Date.now());
    assert.deepEqual(
      [s?.requestsThisMinute.used, s?.tokensToday.used, s?.spendThisMonthMicroUsd.reservedMicroUsd],
      [1, 100, 100],
      'only the first request is counted',
    );
    const second = await ask();
    assert.ok(second.ok, 'the slot the timed-out request would have held is free');
  });

  it('a reserve a paused Redis runs before the timeout takes effect as usual (the pause only delays it)', async () => {
    const p = prefix();
    const store = await open(p, 3000);
    const scopes: Scope[] = [{ kind: 'team', id: 'platform', team: 'platform', limits: { rpm: 5 } }];
    await admin.call('CLIENT', 'PAUSE', '400', 'WRITE');
    const startedAt = performance.now();
    const r = await store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: Date.now() });
    assert.ok(r.ok);
    assert.ok(performance.now() - startedAt >= 300, 'the reserve waited for the pause');
    const [s] = await store.status(scopes, Date.now());
    assert.equal(s?.requestsThisMinute.used, 1);
  });
});

/**
 * Resolves once writes go through again: a write sent now waits behind the paused clients'
 * commands, which Redis runs first, in the order they arrived.
 */
async function waitForUnpause(admin: Redis): Promise<void> {
  await admin.set('clock-test:unpaused', '1', 'PX', 1000);
}
