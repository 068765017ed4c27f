import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AdmissionState } from '../../src/contract/index.js';
import {
  type CandidateGroup,
  RoundRobinCounters,
  type RoutableCandidate,
  type Route,
  type SelectionContext,
  type SelectionPolicy,
  select,
  stableIdTable,
} from '../../src/routing/index.js';

// Routes are built by hand here, shaped and frozen the way live/ builds them, so that these
// tests pin select() alone: no config, no generation, no server.

interface GroupSpec {
  readonly admission: AdmissionState;
  /** Stable ids; a `name:weight` suffix sets the weight (default 1). */
  readonly candidates: readonly string[];
}

function freeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) freeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

function candidate(spec: string, admission: AdmissionState, group: number): RoutableCandidate {
  const [stableId = spec, weight = '1'] = spec.split(':');
  return {
    stableId,
    providerName: stableId,
    identity: `openai http://${stableId}.test/v1`,
    weight: Number(weight),
    admission,
    group,
    zones: null,
    region: null,
  };
}

/** Like live/: `none` groups are dropped; every other candidate may hold a binding. */
function route(policy: SelectionPolicy, groups: readonly GroupSpec[], model = 'm'): Route<RoutableCandidate> {
  const built: CandidateGroup<RoutableCandidate>[] = [];
  const all: RoutableCandidate[] = [];
  groups.forEach((g, index) => {
    if (g.admission === 'none') return;
    const candidates = g.candidates.map((c) => candidate(c, g.admission, index));
    all.push(...candidates);
    built.push({
      index,
      admission: g.admission,
      candidates,
      totalWeight: candidates.reduce((sum, c) => sum + c.weight, 0),
      counterKey: `test:${model}:${index}`,
    });
  });
  return freeze({
    model,
    policy,
    groups: built,
    byStableId: stableIdTable(all),
    admitsNew: built.some((g) => g.admission === 'new_and_existing'),
  });
}

function flat(policy: SelectionPolicy, ids: readonly string[]): Route<RoutableCandidate> {
  return route(policy, [{ admission: 'new_and_existing', candidates: ids }]);
}

function ctx(overrides: Partial<SelectionContext> = {}): SelectionContext {
  return { counters: new RoundRobinCounters(), random: () => 0, ...overrides };
}

const ids = (chain: readonly RoutableCandidate[]): string[] => chain.map((c) => c.stableId);

/** mulberry32: a small seeded PRNG, so weighted and random draws are the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('select: policies', () => {
  it('ordered always starts at the first candidate and fails over in config order', () => {
    const r = flat('ordered', ['a', 'b', 'c']);
    const c = ctx({ random: () => 0.99 });
    for (let i = 0; i < 5; i++) {
      const s = select(r, c);
      assert.deepEqual(ids(s.chain), ['a', 'b', 'c']);
      assert.equal(s.bound, false);
    }
  });

  it('round_robin cycles strictly: 60 selections over 3 candidates give 20/20/20 in a repeating a,b,c cycle', () => {
    const r = flat('round_robin', ['a', 'b', 'c']);
    const c = ctx();
    const firsts: string[] = [];
    for (let i = 0; i < 60; i++) firsts.push(select(r, c).chain[0]!.stableId);
    for (let i = 0; i < 60; i++) assert.equal(firsts[i], ['a', 'b', 'c'][i % 3], `selection ${i}`);
    const counts = Object.fromEntries(['a', 'b', 'c'].map((id) => [id, firsts.filter((f) => f === id).length]));
    assert.deepEqual(counts, { a: 20, b: 20, c: 20 });
  });

  it('round_robin rotates the failover chain so that it starts at the picked candidate and wraps around', () => {
    const r = flat('round_robin', ['a', 'b', 'c']);
    const c = ctx();
    assert.deepEqual(ids(select(r, c).chain), ['a', 'b', 'c']);
    assert.deepEqual(ids(select(r, c).chain), ['b', 'c', 'a']);
    assert.deepEqual(ids(select(r, c).chain), ['c', 'a', 'b']);
    assert.deepEqual(ids(select(r, c).chain), ['a', 'b', 'c']);
  });

  it('round_robin routes that share a counter object keep separate cycles per counter key', () => {
    const one = route('round_robin', [{ admission: 'new_and_existing', candidates: ['a', 'b'] }], 'one');
    const two = route('round_robin', [{ admission: 'new_and_existing', candidates: ['x', 'y', 'z'] }], 'two');
    const c = ctx();
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) {
      seen.push(select(one, c).chain[0]!.stableId);
      seen.push(select(two, c).chain[0]!.stableId);
    }
    assert.deepEqual(seen, ['a', 'x', 'b', 'y', 'a', 'z', 'b', 'x', 'a', 'y', 'b', 'z']);
  });

  it('weighted picks by cumulative weight: the draw maps onto [0, total) in candidate order', () => {
    const r = flat('weighted', ['a:1', 'b:3', 'c:6']);
    const pickAt = (x: number): string[] => ids(select(r, ctx({ random: () => x })).chain);
    // total 10: a covers [0,1), b [1,4), c [4,10)
    assert.deepEqual(pickAt(0), ['a', 'b', 'c']);
    assert.deepEqual(pickAt(0.099), ['a', 'b', 'c']);
    assert.deepEqual(pickAt(0.1), ['b', 'c', 'a']);
    assert.deepEqual(pickAt(0.399), ['b', 'c', 'a']);
    assert.deepEqual(pickAt(0.4), ['c', 'a', 'b']);
    assert.deepEqual(pickAt(0.999999), ['c', 'a', 'b']);
  });

  it('weighted with a seeded random follows the weights (chi-squared well under the 0.1% critical value)', () => {
    const r = flat('weighted', ['a:1', 'b:3', 'c:6']);
    const c = ctx({ random: seeded(20240601) });
    const n = 10_000;
    const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < n; i++) counts[select(r, c).chain[0]!.stableId]! += 1;
    const expected: Record<string, number> = { a: n * 0.1, b: n * 0.3, c: n * 0.6 };
    const chi2 = Object.keys(expected).reduce((sum, k) => sum + (counts[k]! - expected[k]!) ** 2 / expected[k]!, 0);
    // 2 degrees of freedom: p = 0.001 at 13.82.
    assert.ok(chi2 < 13.82, `chi2 ${chi2.toFixed(2)} for ${JSON.stringify(counts)}`);
  });

  it('weighted with the same seed makes the same choices on every run', () => {
    const r = flat('weighted', ['a:2', 'b:5', 'c:1']);
    const draw = (): string[] => {
      const c = ctx({ random: seeded(7) });
      return Array.from({ length: 50 }, () => select(r, c).chain[0]!.stableId);
    };
    assert.deepEqual(draw(), draw());
  });

  it('random picks floor(random * n) and rotates the chain from there', () => {
    const r = flat('random', ['a', 'b', 'c']);
    assert.deepEqual(ids(select(r, ctx({ random: () => 0 })).chain), ['a', 'b', 'c']);
    assert.deepEqual(ids(select(r, ctx({ random: () => 0.34 })).chain), ['b', 'c', 'a']);
    assert.deepEqual(ids(select(r, ctx({ random: () => 0.999 })).chain), ['c', 'a', 'b']);
  });

  it('random with a seeded source reaches every candidate and always returns the whole chain', () => {
    const r = flat('random', ['a', 'b', 'c', 'd']);
    const c = ctx({ random: seeded(99) });
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) {
      const chain = ids(select(r, c).chain);
      assert.deepEqual([...chain].sort(), ['a', 'b', 'c', 'd']);
      seen.add(chain[0]!);
    }
    assert.deepEqual([...seen].sort(), ['a', 'b', 'c', 'd']);
  });

  it('a single-candidate route returns that candidate under every policy', () => {
    for (const policy of ['ordered', 'round_robin', 'random', 'weighted'] as const) {
      assert.deepEqual(ids(select(flat(policy, ['only']), ctx({ random: () => 0.7 })).chain), ['only'], policy);
    }
  });
});

describe('select: session binding', () => {
  it('a bound session reuses its candidate first, then fails over through the admitting candidates', () => {
    const r = flat('round_robin', ['a', 'b', 'c']);
    const c = ctx({ boundStableId: 'c' });
    for (let i = 0; i < 4; i++) {
      const s = select(r, c);
      assert.equal(s.bound, true);
      assert.deepEqual(ids(s.chain), ['c', 'a', 'b']);
    }
  });

  it('a bound session keeps an existing_only candidate, which new requests never get', () => {
    const r = route('round_robin', [
      { admission: 'new_and_existing', candidates: ['a', 'b'] },
      { admission: 'existing_only', candidates: ['old'] },
    ]);
    const bound = select(r, ctx({ boundStableId: 'old' }));
    assert.equal(bound.bound, true);
    assert.deepEqual(ids(bound.chain), ['old', 'a', 'b']);

    const c = ctx();
    for (let i = 0; i < 6; i++) {
      const s = select(r, c);
      assert.equal(s.bound, false);
      assert.ok(!ids(s.chain).includes('old'), `new request got the existing_only candidate: ${ids(s.chain).join(',')}`);
    }
  });

  it('a binding to a stable_id the route no longer has falls back to a new selection', () => {
    const r = flat('ordered', ['a', 'b']);
    const s = select(r, ctx({ boundStableId: 'gone' }));
    assert.equal(s.bound, false);
    assert.deepEqual(ids(s.chain), ['a', 'b']);
  });

  it('a binding to a candidate whose group is `none` falls back to a new selection', () => {
    const r = route('ordered', [
      { admission: 'none', candidates: ['withdrawn'] },
      { admission: 'new_and_existing', candidates: ['a'] },
    ]);
    const s = select(r, ctx({ boundStableId: 'withdrawn' }));
    assert.equal(s.bound, false);
    assert.deepEqual(ids(s.chain), ['a']);
  });
});

describe('select: selection groups', () => {
  it('the lowest new_and_existing group wins and later admitting groups follow it in the chain', () => {
    const r = route('ordered', [
      { admission: 'existing_only', candidates: ['e0'] },
      { admission: 'new_and_existing', candidates: ['g1a', 'g1b'] },
      { admission: 'existing_only', candidates: ['e2'] },
      { admission: 'new_and_existing', candidates: ['g3a'] },
    ]);
    assert.deepEqual(ids(select(r, ctx()).chain), ['g1a', 'g1b', 'g3a']);
  });

  it('round_robin rotates only within the winning group; later groups keep their order at the end', () => {
    const r = route('round_robin', [
      { admission: 'new_and_existing', candidates: ['a', 'b', 'c'] },
      { admission: 'new_and_existing', candidates: ['x', 'y'] },
    ]);
    const c = ctx();
    assert.deepEqual(ids(select(r, c).chain), ['a', 'b', 'c', 'x', 'y']);
    assert.deepEqual(ids(select(r, c).chain), ['b', 'c', 'a', 'x', 'y']);
    assert.deepEqual(ids(select(r, c).chain), ['c', 'a', 'b', 'x', 'y']);
  });

  it('the chain is empty when no group admits new requests, while a bound session is still served', () => {
    const r = route('round_robin', [
      { admission: 'existing_only', candidates: ['a'] },
      { admission: 'none', candidates: ['b'] },
      { admission: 'existing_only', candidates: ['c'] },
    ]);
    assert.equal(r.admitsNew, false);
    const fresh = select(r, ctx());
    assert.deepEqual(ids(fresh.chain), []);
    assert.equal(fresh.bound, false);
    const bound = select(r, ctx({ boundStableId: 'c' }));
    assert.deepEqual(ids(bound.chain), ['c']);
    assert.equal(bound.bound, true);
  });

  it('a route with no groups at all gives an empty chain', () => {
    const r = route('ordered', [{ admission: 'none', candidates: ['a'] }]);
    assert.deepEqual(ids(select(r, ctx()).chain), []);
  });
});
