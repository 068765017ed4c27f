import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { type CacheStore, CacheStoreError, createCacheStore, entryBytes, RedisCacheStore } from '../../src/cache/index.js';
import { deleteKeysWithPrefix, freePort, startRedis, stopRedis } from '../support/redis.js';
import { cacheStoreSuite, digest, entry } from './store-suite.js';

// The Redis store: the shared suite on the shared Redis at 127.0.0.1:6379 (each store under
// its own key prefix, removed afterwards; time is Redis's own, so the suite waits for
// expiry), then its key layout, what it makes of records it cannot use, and its failures:
// Redis down, and Redis paused (on a private redis-server: CLIENT PAUSE on the shared one
// would stall every other test).

const REDIS_URL = 'redis://127.0.0.1:6379';
const RUN_PREFIX = `switchyard-test:cache:${process.pid}:${randomUUID()}:`;
const opened: RedisCacheStore[] = [];

/** A store under its own prefix; its command timeout is generous, since only the paused-Redis test is about slowness. */
async function open(keyPrefix = `${RUN_PREFIX}${randomUUID()}:`, url = REDIS_URL, commandTimeoutMs = 5000): Promise<RedisCacheStore> {
  const store = new RedisCacheStore({ url, keyPrefix, commandTimeoutMs });
  opened.push(store);
  if (!(await store.ready(5000))) throw new Error(`Redis at ${url} is not reachable`);
  return store;
}

after(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await deleteKeysWithPrefix(REDIS_URL, RUN_PREFIX);
});

cacheStoreSuite('redis', {
  fresh: () => open(),
  now: () => Date.now(),
  pass: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  cleanup: async () => undefined,
});

describe('redis cache store', () => {
  let admin: Redis;
  before(() => {
    admin = new Redis(REDIS_URL);
  });
  after(() => admin.disconnect());

  const keysUnder = async (prefix: string): Promise<string[]> => (await admin.keys(`${prefix}*`)).map((k) => k.slice(prefix.length)).sort();

  it("keeps its keys under the prefix's cache: namespace, an entry expiring in Redis when it does in the store", async () => {
    const prefix = `${RUN_PREFIX}layout:`;
    const store = await open(prefix);
    const e = entry('layout', { createdAtMs: Date.now(), ttlS: 600 });
    await store.put(e);
    await store.addVector('c1', e.key, Float32Array.from([1, 2]), 600, 10);
    assert.deepEqual(
      await keysUnder(prefix),
      ['cache:bytes', 'cache:exp', `cache:e:${e.key}`, 'cache:size', 'cache:v:c1', 'cache:vz:c1'].sort(),
    );
    const fields = await admin.hgetall(`${prefix}cache:e:${e.key}`);
    assert.deepEqual(
      { ...fields, data: JSON.parse(fields.data as string) },
      { route: e.route, team: e.team, bytes: String(entryBytes(e)), data: e, ctx: 'c1' },
    );
    assert.equal(await admin.pexpiretime(`${prefix}cache:e:${e.key}`), e.createdAtMs + 600_000);
    const ttl = await admin.pttl(`${prefix}cache:v:c1`);
    assert.ok(ttl > 0 && ttl <= 600_000, `vector ttl ${ttl}`);
  });

  it('a vector added right after an unawaited put is noted in its entry, so that a drop removes it', async () => {
    const prefix = `${RUN_PREFIX}order:`;
    const store = await open(prefix);
    const e = entry('order', { createdAtMs: Date.now() });
    const stored = store.put(e);
    await store.addVector('ctx', e.key, Float32Array.from([1, 0]), 600, 10);
    await stored;
    assert.equal(await admin.hget(`${prefix}cache:e:${e.key}`, 'ctx'), 'ctx');
    assert.equal(await store.drop({}), 1);
    assert.equal(await admin.exists(`${prefix}cache:v:ctx`, `${prefix}cache:vz:ctx`), 0);
  });

  it('a record of another format is a miss; a record that is not JSON fails with CacheStoreError', async () => {
    const prefix = `${RUN_PREFIX}records:`;
    const store = await open(prefix);
    await admin.hset(`${prefix}cache:e:${digest('v2')}`, 'data', JSON.stringify({ ...entry('v2', { createdAtMs: Date.now() }), v: 2 }));
    await admin.hset(`${prefix}cache:e:${digest('garbled')}`, 'data', '{"v":1,"key":');
    assert.equal(await store.get(digest('v2')), null);
    await assert.rejects(
      store.get(digest('garbled')),
      (err: Error) => err instanceof CacheStoreError && /not valid JSON/.test(err.message),
    );
  });

  it("nearest removes the vectors of entries that are gone from the context's keys", async () => {
    const prefix = `${RUN_PREFIX}dead:`;
    const store = await open(prefix);
    const kept = entry('kept', { createdAtMs: Date.now() });
    await store.put(kept);
    await store.addVector('ctx', kept.key, Float32Array.from([0, 1]), 600, 100);
    for (let i = 0; i < 20; i += 1) await store.addVector('ctx', digest(`ghost-${i}`), Float32Array.from([1, i / 100]), 600, 100);
    await admin.hset(`${prefix}cache:v:ctx`, 'malformed', Buffer.from([1, 2, 3]));
    assert.equal((await store.nearest('ctx', Float32Array.from([1, 0])))?.key, kept.key);
    assert.deepEqual(await admin.hkeys(`${prefix}cache:v:ctx`), [kept.key]);
    assert.deepEqual(await admin.zrange(`${prefix}cache:vz:ctx`, 0, -1), [kept.key]);
  });

  it('drop pages through more entries than one SCAN page holds, and only its own prefix', async () => {
    const prefix = `${RUN_PREFIX}many[*]?:`;
    const store = await open(prefix);
    const other = await open(`${RUN_PREFIX}many-other:`);
    const now = Date.now();
    for (let batch = 0; batch < 12; batch += 1) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => {
          const i = batch * 100 + j;
          return store.put(entry(`bulk-${i}`, { createdAtMs: now, team: i % 3 === 0 ? 'research' : 'platform' }));
        }),
      );
    }
    const neighbour = entry('neighbour', { createdAtMs: now, team: 'research' });
    await other.put(neighbour);
    assert.equal(await store.drop({ team: 'research' }), 400);
    assert.equal(await store.drop({}), 800);
    assert.equal(await store.bytes(), 0);
    assert.deepEqual(await other.get(neighbour.key), neighbour, 'a store under another prefix keeps its entries');
  });

  it('forgets an expired entry in its byte count, and its index with it', async () => {
    const prefix = `${RUN_PREFIX}sweep:`;
    const store = await open(prefix);
    const e = entry('brief', { createdAtMs: Date.now(), ttlS: 2 });
    await store.put(e);
    assert.equal(await store.bytes(), entryBytes(e));
    await new Promise((resolve) => setTimeout(resolve, 2100));
    assert.equal(await store.bytes(), 0);
    assert.equal(await admin.zcard(`${prefix}cache:exp`), 0);
    assert.equal(await admin.hlen(`${prefix}cache:size`), 0);
  });

  it('createCacheStore builds the redis store under the given prefix', async () => {
    const prefix = `${RUN_PREFIX}factory:`;
    const store = createCacheStore({ store: 'redis', redisUrl: REDIS_URL, keyPrefix: prefix });
    opened.push(store as RedisCacheStore);
    assert.equal(store.kind, 'redis');
    assert.ok(await (store as RedisCacheStore).ready(5000));
    const e = entry('factory', { createdAtMs: Date.now() });
    await store.put(e);
    assert.deepEqual((await admin.hkeys(`${prefix}cache:e:${e.key}`)).sort(), ['bytes', 'data', 'route', 'team']);
  });
});

describe('redis cache store failures', () => {
  const failsWithStoreError = (err: Error): boolean => err instanceof CacheStoreError && /^cache store \(Redis\)/.test(err.message);

  it('every operation rejects with CacheStoreError at once while Redis cannot be reached', { timeout: 20_000 }, async () => {
    const events: string[] = [];
    const store: CacheStore = createCacheStore(
      { store: 'redis', redisUrl: 'redis://127.0.0.1:1', keyPrefix: 'unreachable:', password: 'hunter2-secret' },
      { onConnectionEvent: (event, detail) => events.push(`${event} ${detail}`) },
    );
    try {
      const e = entry('down', { createdAtMs: Date.now() });
      await assert.rejects(Promise.resolve(store.get(e.key)), failsWithStoreError);
      await assert.rejects(store.put(e), failsWithStoreError);
      await assert.rejects(store.addVector('ctx', e.key, Float32Array.from([1]), 60, 10), failsWithStoreError);
      await assert.rejects(Promise.resolve(store.nearest('ctx', Float32Array.from([1]))), failsWithStoreError);
      await assert.rejects(store.drop({}), failsWithStoreError);
      await assert.rejects(Promise.resolve(store.bytes()), failsWithStoreError);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.ok(events.length > 0, 'the connection errors were reported');
      assert.ok(!events.join('\n').includes('hunter2'), events.join('\n'));
    } finally {
      await store.close();
    }
  });

  describe('on a paused Redis', () => {
    let port: number;
    let redis: ChildProcess;
    let admin: Redis;
    before(async () => {
      port = await freePort();
      redis = await startRedis(port);
      admin = new Redis(`redis://127.0.0.1:${port}`);
    });
    after(async () => {
      admin.disconnect();
      await stopRedis(redis);
    });

    it('a lookup Redis does not answer within commandTimeoutMs rejects with CacheStoreError', { timeout: 20_000 }, async () => {
      const store = await open('paused:', `redis://127.0.0.1:${port}`, 100);
      const e = entry('paused', { createdAtMs: Date.now() });
      await store.put(e);
      await admin.call('CLIENT', 'PAUSE', '1000', 'ALL');
      try {
        await assert.rejects(store.get(e.key), (err: Error) => failsWithStoreError(err) && /timed out/i.test(err.message));
        await assert.rejects(store.nearest('ctx', Float32Array.from([1])), failsWithStoreError);
      } finally {
        // The admin connection is paused too: this returns once the pause is over.
        await admin.call('CLIENT', 'UNPAUSE');
      }
      assert.deepEqual(await store.get(e.key), e, 'answers again once Redis does');
    });
  });
});
