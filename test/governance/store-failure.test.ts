import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { applyStoreErrorPolicy, RedisGovernanceStore, type Scope, type StoreFailure } from '../../src/governance/index.js';
import { freePort, startRedis, stopRedis } from '../support/redis.js';

// Redis stopped mid-run. A private redis-server on a spare loopback port (never the shared
// one), stopped and started again by this test: fail_closed refuses with
// governance_unavailable, fail_open serves unenforced and counts, both report, and
// enforcement resumes when Redis is back. Time for the windows is injected.

const T0 = Date.UTC(2026, 10, 15, 12, 0, 0);
const scopes: Scope[] = [{ kind: 'team', id: 'platform', team: 'platform', limits: { rpm: 1 } }];

describe('redis store when Redis stops and comes back', () => {
  let port: number;
  let redis: ChildProcess;
  let inner: RedisGovernanceStore;
  const failures: StoreFailure[] = [];

  before(async () => {
    port = await freePort();
    redis = await startRedis(port);
    inner = new RedisGovernanceStore({
      url: `redis://127.0.0.1:${port}`,
      keyPrefix: 'failure-test:',
      commandTimeoutMs: 500,
      clock: 'caller',
    });
    assert.equal(await inner.ready(5000), true);
  });

  after(async () => {
    await inner.close();
    await stopRedis(redis);
  });

  it('calls a script by SHA and falls back to EVAL after SCRIPT FLUSH (NOSCRIPT)', async () => {
    const admin = new Redis(`redis://127.0.0.1:${port}`);
    await admin.script('FLUSH');
    admin.disconnect();
    const r = await inner.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: T0 });
    assert.equal(r.ok, true);
  });

  it('fail_closed refuses with governance_unavailable and fail_open admits unenforced; both report, neither keeps local counters', async () => {
    const unbooked: string[] = [];
    const closed = applyStoreErrorPolicy(
      inner,
      'fail_closed',
      (f) => failures.push(f),
      (reason) => unbooked.push(reason),
    );
    const open = applyStoreErrorPolicy(
      inner,
      'fail_open',
      (f) => failures.push(f),
      (reason) => unbooked.push(reason),
    );
    const inFlight = await closed.reserve({
      scopes: [{ ...(scopes[0] as Scope), limits: {} }],
      tokens: 1,
      costMicroUsd: 0,
      nowMs: T0 + 500,
    });
    assert.ok(inFlight.ok && inFlight.reservation.enforced);
    await stopRedis(redis);

    // A request admitted before the outage settles during it: reported, never thrown at the request path.
    await closed.settle(inFlight.reservation, { tokens: 1, costMicroUsd: 0 }, T0 + 900);
    assert.deepEqual(
      failures.splice(0).map((f) => [f.operation, f.policy]),
      [['settle', 'fail_closed']],
    );
    assert.deepEqual(unbooked.splice(0), ['settle_failed'], 'its usage is counted as not in the books');

    const refused = await closed.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: T0 + 1000 });
    assert.equal(refused.ok, false);
    if (!refused.ok) {
      assert.equal(refused.refusal.code, 'governance_unavailable');
      assert.equal(refused.refusal.retryAfterS, 1);
    }
    assert.equal(closed.storeErrors, 2, 'the settle and the reserve');

    // rpm 1 is already used at T0, but no counter is consulted while Redis is down.
    for (let i = 0; i < 3; i += 1) {
      const admitted = await open.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: T0 + 2000 + i });
      assert.equal(admitted.ok, true);
      if (admitted.ok) {
        assert.equal(admitted.reservation.enforced, false);
        await open.settle(admitted.reservation, { tokens: 1, costMicroUsd: 0 }, T0 + 3000);
      }
    }
    assert.deepEqual(unbooked, ['fail_open', 'fail_open', 'fail_open'], 'each request served unenforced is counted as unbooked');
    assert.equal(open.storeErrors, 3);
    assert.equal(open.admittedUnenforced, 3);
    assert.ok(failures.every((f) => f.operation === 'reserve' && /governance store \(Redis\) failed/.test(f.message)));
    assert.deepEqual(new Set(failures.map((f) => f.policy)), new Set(['fail_closed', 'fail_open']));
  });

  it('enforcement resumes once Redis is back (the client reconnects by itself)', async () => {
    redis = await startRedis(port);
    assert.equal(await inner.ready(10_000), true, 'reconnected');
    const closed = applyStoreErrorPolicy(inner, 'fail_closed', (f) => failures.push(f));
    const now = T0 + 10_000;
    assert.equal((await closed.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: now })).ok, true);
    const second = await closed.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs: now + 1 });
    assert.equal(second.ok, false);
    if (!second.ok) assert.equal(second.refusal.code, 'rate_limit_exceeded');
  });
});
