import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type GovernanceStore, MemoryGovernanceStore, RedisGovernanceStore, type Scope } from '../../src/governance/index.js';
import { deleteKeysWithPrefix } from '../support/redis.js';
import { storeSuite } from './store-suite.js';

// Both stores, one suite. The redis store runs against the shared Redis on 127.0.0.1:6379,
// each store under its own key prefix, removed afterwards, and on the caller's clock: the
// suite simulates time. Redis's own clock is tested in redis-clock.test.ts.

const REDIS_URL = 'redis://127.0.0.1:6379';
const RUN_PREFIX = `switchyard-test:${process.pid}:${randomUUID()}:`;

storeSuite('memory', {
  fresh: async (options) => new MemoryGovernanceStore(options),
  peer: async () => null,
  cleanup: async () => undefined,
});

const opened: RedisGovernanceStore[] = [];
const prefixOf = new Map<GovernanceStore, string>();

async function openRedis(keyPrefix: string, reservationTtlMs?: number): Promise<RedisGovernanceStore> {
  const store = new RedisGovernanceStore({ url: REDIS_URL, keyPrefix, reservationTtlMs, clock: 'caller' });
  opened.push(store);
  prefixOf.set(store, keyPrefix);
  if (!(await store.ready(5000))) throw new Error(`Redis at ${REDIS_URL} is not reachable`);
  return store;
}

describe('redis store keys', () => {
  it('live under the configured prefix, hash-tagged by team, one set per team and per key (reservations only with a budget)', async () => {
    const prefix = `${RUN_PREFIX}layout:`;
    const store = await openRedis(prefix);
    const nowMs = Date.UTC(2026, 10, 15, 12, 0, 0);
    const scopes: Scope[] = [
      { kind: 'team', id: 'platform', team: 'platform', limits: { budgetMicroUsdPerMonth: 100 } },
      { kind: 'key', id: 'ci-bot', team: 'platform', limits: {} },
    ];
    assert.ok((await store.reserve({ scopes, tokens: 1, costMicroUsd: 1, nowMs })).ok);
    const admin = new Redis(REDIS_URL);
    try {
      const keys = (await admin.keys(`${prefix}*`)).map((k) => k.slice(prefix.length)).sort();
      assert.deepEqual(keys, [
        '{platform}:k:ci-bot:counters',
        '{platform}:k:ci-bot:log',
        '{platform}:t:counters',
        '{platform}:t:log',
        '{platform}:t:resv',
      ]);
    } finally {
      admin.disconnect();
    }
  });
});

describe('redis store renewal', () => {
  it('a log that expired while its counters stayed (an idle scope) counts from zero, not from the stale sums', async () => {
    const prefix = `${RUN_PREFIX}renew:`;
    const store = await openRedis(prefix);
    const nowMs = Date.UTC(2026, 10, 15, 12, 0, 0);
    const scopes: Scope[] = [{ kind: 'team', id: 'platform', team: 'platform', limits: { rpm: 1 } }];
    assert.ok((await store.reserve({ scopes, tokens: 5, costMicroUsd: 0, nowMs })).ok);
    const admin = new Redis(REDIS_URL);
    try {
      // What the log's time to live does to an idle scope in real time.
      await admin.del(`${prefix}{platform}:t:log`);
    } finally {
      admin.disconnect();
    }
    const later = await store.reserve({ scopes, tokens: 5, costMicroUsd: 0, nowMs: nowMs + 60_001 });
    assert.ok(later.ok, 'the expired request no longer counts');
    const [s] = await store.status(scopes, nowMs + 60_002);
    assert.deepEqual([s?.requestsThisMinute.used, s?.tokensThisMinute.used], [1, 5]);
  });
});

storeSuite('redis', {
  fresh: (options) => openRedis(`${RUN_PREFIX}${randomUUID()}:`, options?.reservationTtlMs),
  peer: (store) => openRedis(prefixOf.get(store) as string),
  cleanup: async () => {
    await Promise.all(opened.map((s) => s.close()));
    await deleteKeysWithPrefix(REDIS_URL, RUN_PREFIX);
  },
});
