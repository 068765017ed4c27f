import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { type CacheEntry, type CacheStore, entryBytes } from '../../src/cache/index.js';

// The behaviour every CacheStore shows, run against memory and redis alike. Time passes
// through the fixture: the memory store's injected clock moves, Redis's real one is waited on.

export interface CacheStoreFixture {
  /** A fresh, empty store (a new key prefix for redis). */
  fresh(): Promise<CacheStore>;
  /** Epoch ms now, on the clock the stores expire entries by. */
  now(): number;
  /** Lets `ms` pass for the stores. */
  pass(ms: number): Promise<void>;
  cleanup(): Promise<void>;
}

/** A key digest as the request path makes them: hex. */
export function digest(name: string): string {
  return createHash('sha256').update(name).digest('hex');
}

/** A chat entry named `name`; a field given as undefined is left out, as a JSON round trip would. */
export function entry(name: string, fields: Partial<CacheEntry> & { createdAtMs: number }): CacheEntry {
  const whole = {
    v: 1,
    key: digest(name),
    operation: 'chat',
    protocol: 'openai',
    route: 'gpt-4o',
    team: 'platform',
    ttlS: 3600,
    form: 'whole',
    body: JSON.stringify({ id: `chatcmpl-${name}`, choices: [{ message: { role: 'assistant', content: `answer ${name}` } }] }),
    origin: { provider: 'east', model: 'gpt-4o-2024-08-06', candidate: 'east-gpt-4o' },
    usage: { inputTokens: 12, outputTokens: 5 },
    costMicroUsd: 85,
    ...fields,
  };
  return Object.fromEntries(Object.entries(whole).filter(([, v]) => v !== undefined)) as unknown as CacheEntry;
}

const vec = (...xs: number[]): Float32Array => Float32Array.from(xs);

export function cacheStoreSuite(name: string, fixture: CacheStoreFixture): void {
  describe(`CacheStore contract: ${name}`, () => {
    after(() => fixture.cleanup());

    it('an entry put is got back whole under its key; another key misses', async () => {
      const store = await fixture.fresh();
      const stream = entry('stream', {
        createdAtMs: fixture.now(),
        form: 'stream',
        body: undefined,
        events: ['event: message_start\ndata: {"type":"message_start"}\n\n', 'data: [DONE]\n\n'],
        usage: null,
        costMicroUsd: null,
        protocol: 'anthropic',
      });
      await store.put(stream);
      assert.deepEqual(await store.get(stream.key), stream);
      assert.equal(await store.get(digest('never stored')), null);
    });

    it('a put under a key already held replaces its entry and its counted bytes', async () => {
      const store = await fixture.fresh();
      const first = entry('same', { createdAtMs: fixture.now(), body: 'short' });
      const second = entry('same', { createdAtMs: fixture.now(), body: 'a much longer body than the first one was' });
      await store.put(first);
      await store.put(second);
      assert.deepEqual(await store.get(first.key), second);
      assert.equal(await store.bytes(), entryBytes(second));
    });

    it('an entry misses once its ttl has passed since it was created, and stops being counted', async () => {
      const store = await fixture.fresh();
      const short = entry('short-lived', { createdAtMs: fixture.now(), ttlS: 2 });
      const long = entry('long-lived', { createdAtMs: fixture.now(), ttlS: 3600 });
      await store.put(short);
      await store.put(long);
      assert.deepEqual(await store.get(short.key), short);
      await fixture.pass(2100);
      assert.equal(await store.get(short.key), null);
      assert.deepEqual(await store.get(long.key), long);
      assert.equal(await store.bytes(), entryBytes(long));
    });

    it('an entry created longer than its ttl ago is not stored', async () => {
      const store = await fixture.fresh();
      const stale = entry('stale', { createdAtMs: fixture.now() - 10_000, ttlS: 5 });
      await store.put(stale);
      assert.equal(await store.get(stale.key), null);
      assert.equal(await store.bytes(), 0);
    });

    it('nearest answers the live entry of the context whose vector is most similar, with its cosine similarity', async () => {
      const store = await fixture.fresh();
      const now = fixture.now();
      const [north, east, northEast] = [
        entry('north', { createdAtMs: now }),
        entry('east', { createdAtMs: now }),
        entry('ne', { createdAtMs: now }),
      ];
      for (const e of [north, east, northEast]) await store.put(e);
      await store.addVector('ctx-a', north.key, vec(0, 1, 0), 3600, 10);
      await store.addVector('ctx-a', east.key, vec(1, 0, 0), 3600, 10);
      await store.addVector('ctx-b', northEast.key, vec(0.9, 1, 0), 3600, 10);
      const found = await store.nearest('ctx-a', vec(0.2, 2, 0));
      assert.equal(found?.key, north.key, 'ctx-b holds a closer vector, but another context is never searched');
      assert.ok(Math.abs((found?.similarity ?? 0) - 2 / Math.sqrt(4.04)) < 1e-6, `similarity ${found?.similarity}`);
      assert.equal((await store.nearest('ctx-b', vec(1, 0, 0)))?.key, northEast.key);
      assert.equal(await store.nearest('ctx-none', vec(1, 0, 0)), null);
    });

    it('a context keeps at most maxEntries vectors: the oldest written goes first', async () => {
      const store = await fixture.fresh();
      const now = fixture.now();
      const es = ['one', 'two', 'three'].map((n) => entry(n, { createdAtMs: now }));
      for (const e of es) await store.put(e);
      await store.addVector('ctx', es[0]!.key, vec(1, 0), 3600, 2);
      await store.addVector('ctx', es[1]!.key, vec(0, 1), 3600, 2);
      await store.addVector('ctx', es[2]!.key, vec(-1, 0), 3600, 2);
      const found = await store.nearest('ctx', vec(1, 0));
      assert.equal(found?.key, es[1]!.key, 'the first vector is gone though it matched exactly');
      assert.equal(found?.similarity, 0);
      assert.deepEqual(await store.get(es[0]!.key), es[0], 'the entry itself stays: only its vector was dropped');
    });

    it('nearest skips a vector whose entry is gone and answers the next most similar', async () => {
      const store = await fixture.fresh();
      const now = fixture.now();
      const gone = entry('gone', { createdAtMs: now, route: 'old-route' });
      const expiring = entry('expiring', { createdAtMs: now, ttlS: 2 });
      const kept = entry('kept', { createdAtMs: now, ttlS: 3600 });
      for (const e of [gone, expiring, kept]) await store.put(e);
      await store.addVector('ctx', gone.key, vec(1, 0), 3600, 10);
      await store.addVector('ctx', expiring.key, vec(1, 0.1), 3600, 10);
      await store.addVector('ctx', kept.key, vec(0, 1), 3600, 10);
      await store.addVector('ctx', digest('never stored'), vec(1, 0.01), 3600, 10);
      assert.equal(await store.drop({ route: 'old-route' }), 1);
      assert.equal((await store.nearest('ctx', vec(1, 0)))?.key, expiring.key);
      await fixture.pass(2100);
      assert.equal((await store.nearest('ctx', vec(1, 0)))?.key, kept.key);
      assert.equal((await store.nearest('ctx', vec(1, 0)))?.key, kept.key, 'the same answer once the dead vectors are removed');
    });

    it('a vector of a length other than the query is never similar', async () => {
      const store = await fixture.fresh();
      const e = entry('short-vector', { createdAtMs: fixture.now() });
      await store.put(e);
      await store.addVector('ctx', e.key, vec(1, 0), 3600, 10);
      assert.deepEqual(await store.nearest('ctx', vec(1, 0, 0)), { key: e.key, similarity: 0 });
    });

    it('drop removes the entries of a route, of a team, of both, or all, with their vectors, and counts them', async () => {
      const store = await fixture.fresh();
      const now = fixture.now();
      const rows = [
        ['a', 'gpt-4o', 'platform'],
        ['b', 'gpt-4o', 'research'],
        ['c', 'claude', 'platform'],
        ['d', 'claude', 'research'],
        ['e', 'claude', 'research'],
        ['f', 'gemini', 'none'],
      ] as const;
      const es = rows.map(([n, route, team]) => entry(n, { createdAtMs: now, route, team }));
      for (const [i, e] of es.entries()) {
        await store.put(e);
        await store.addVector('ctx', e.key, vec(1, i), 3600, 100);
      }
      const live = async () => {
        const out: string[] = [];
        for (const [i, e] of es.entries()) if ((await store.get(e.key)) !== null) out.push(rows[i]![0]);
        return out.join('');
      };
      assert.equal(await store.drop({ route: 'nothing-here' }), 0);
      assert.equal(await store.drop({ route: 'claude', team: 'research' }), 2);
      assert.equal(await live(), 'abcf');
      assert.equal(await store.drop({ route: 'gpt-4o' }), 2);
      assert.equal(await live(), 'cf');
      assert.equal(await store.drop({ team: 'platform' }), 1);
      assert.equal(await live(), 'f');
      assert.equal(await store.bytes(), entryBytes(es[5]!));
      assert.equal((await store.nearest('ctx', vec(1, 0)))?.key, es[5]!.key, 'the dropped entries left no vector behind');
      assert.equal(await store.drop({}), 1);
      assert.equal(await live(), '');
      assert.equal(await store.nearest('ctx', vec(1, 0)), null);
      assert.equal(await store.bytes(), 0);
    });

    it('bytes is the sum of the entries’ sizes', async () => {
      const store = await fixture.fresh();
      const es = ['x', 'y', 'z'].map((n, i) => entry(n, { createdAtMs: fixture.now(), body: 'b'.repeat(100 * (i + 1)) }));
      assert.equal(await store.bytes(), 0);
      for (const e of es) await store.put(e);
      assert.equal(
        await store.bytes(),
        es.reduce((sum, e) => sum + entryBytes(e), 0),
      );
    });
  });
}
