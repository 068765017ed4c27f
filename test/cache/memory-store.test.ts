import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createCacheStore, entryBytes, MemoryCacheStore } from '../../src/cache/index.js';
import { cacheStoreSuite, digest, entry } from './store-suite.js';

// The memory store: the shared suite on an injected clock, then what only one replica's
// store does: a byte bound with the least recently used out first, and answers without a promise.

let clockMs = Date.UTC(2026, 11, 5, 12, 0, 0);
const now = (): number => clockMs;

cacheStoreSuite('memory', {
  fresh: async () => new MemoryCacheStore({ maxBytes: 1_000_000, now }),
  now,
  pass: async (ms) => {
    clockMs += ms;
  },
  cleanup: async () => undefined,
});

const T0 = Date.UTC(2026, 11, 5, 12, 0, 0);

/** Entries of exactly the same size, so a bound in entries is a bound in bytes. */
function sized(name: string, createdAtMs = T0, ttlS = 3600) {
  return entry(name, { createdAtMs, ttlS, body: 'x'.repeat(200) });
}

describe('memory cache store', () => {
  it('get and nearest answer at once, not with a promise', async () => {
    const store = new MemoryCacheStore({ maxBytes: 10_000, now: () => T0 });
    const e = sized('sync');
    await store.put(e);
    await store.addVector('ctx', e.key, Float32Array.from([1, 0]), 60, 10);
    const got = store.get(e.key);
    const near = store.nearest('ctx', Float32Array.from([1, 0]));
    assert.ok(!(got instanceof Promise) && !(near instanceof Promise));
    assert.deepEqual(got, e);
    assert.deepEqual(near, { key: e.key, similarity: 1 });
  });

  it('past maxBytes the least recently used entry goes first, a hit counting as a use', async () => {
    const size = entryBytes(sized('a'));
    const store = new MemoryCacheStore({ maxBytes: size * 3, now: () => T0 });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => sized(n));
    for (const e of [a, b, c]) await store.put(e!);
    assert.deepEqual(store.get(a!.key), a, 'a is now the most recently used');
    await store.put(d!);
    assert.equal(store.get(b!.key), null, 'b was the least recently used');
    for (const e of [a, c, d]) assert.deepEqual(store.get(e!.key), e);
    assert.equal(store.bytes(), size * 3);
  });

  it('a put past maxBytes removes expired entries before it evicts a live one', async () => {
    let t = T0;
    const size = entryBytes(sized('a'));
    const store = new MemoryCacheStore({ maxBytes: size * 2, now: () => t });
    const live = sized('live', T0, 3600);
    const expiring = sized('expiring', T0, 1);
    await store.put(live);
    await store.put(expiring);
    t += 2000;
    const next = sized('next', t, 3600);
    await store.put(next);
    assert.deepEqual(store.get(live.key), live, 'the least recently used, but alive');
    assert.deepEqual(store.get(next.key), next);
    assert.equal(store.bytes(), size * 2);
  });

  it('an entry larger than maxBytes is not stored and evicts nothing', async () => {
    const small = sized('small');
    const store = new MemoryCacheStore({ maxBytes: entryBytes(small) + 10, now: () => T0 });
    await store.put(small);
    const huge = entry('huge', { createdAtMs: T0, body: 'y'.repeat(1000) });
    await store.put(huge);
    assert.equal(store.get(huge.key), null);
    assert.deepEqual(store.get(small.key), small);
    assert.equal(store.bytes(), entryBytes(small));
  });

  it('an evicted entry takes its vectors with it, and a context with none left is forgotten', async () => {
    const size = entryBytes(sized('a'));
    const store = new MemoryCacheStore({ maxBytes: size, now: () => T0 });
    const first = sized('first');
    await store.put(first);
    await store.addVector('ctx-first', first.key, Float32Array.from([1, 0]), 3600, 10);
    await store.put(sized('second'));
    assert.equal(store.nearest('ctx-first', Float32Array.from([1, 0])), null);
  });

  it('a vector expires after its own ttl even while its entry lives', async () => {
    let t = T0;
    const store = new MemoryCacheStore({ maxBytes: 10_000, now: () => t });
    const e = sized('lives-longer', T0, 3600);
    await store.put(e);
    await store.addVector('ctx', e.key, Float32Array.from([1, 0]), 60, 10);
    t += 61_000;
    assert.equal(store.nearest('ctx', Float32Array.from([1, 0])), null);
    assert.deepEqual(store.get(e.key), e);
  });

  it('a vector written again becomes the newest of its context', async () => {
    const store = new MemoryCacheStore({ maxBytes: 10_000, now: () => T0 });
    const [a, b, c] = ['a', 'b', 'c'].map((n) => sized(n));
    for (const e of [a, b, c]) await store.put(e!);
    await store.addVector('ctx', a!.key, Float32Array.from([1, 0]), 3600, 2);
    await store.addVector('ctx', b!.key, Float32Array.from([0, 1]), 3600, 2);
    await store.addVector('ctx', a!.key, Float32Array.from([1, 0]), 3600, 2);
    await store.addVector('ctx', c!.key, Float32Array.from([-1, 0]), 3600, 2);
    assert.equal(store.nearest('ctx', Float32Array.from([0, 1]))?.key, a!.key, 'b was the oldest and went');
  });

  it('createCacheStore builds the memory store from its settings, on the injected clock', async () => {
    let t = T0;
    const store = createCacheStore({ store: 'memory', maxBytes: 10_000 }, { now: () => t });
    assert.equal(store.kind, 'memory');
    const e = sized('made', T0, 1);
    await store.put(e);
    assert.deepEqual(store.get(e.key), e);
    t += 1000;
    assert.equal(store.get(digest('made')), null);
  });
});
