import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../src/routing/index.js';

test('a seeded random source replays the same choices for the same seed, and others for another seed', () => {
  const a = seededRandom(42);
  const b = seededRandom(42);
  const c = seededRandom(43);
  const xs = Array.from({ length: 100 }, () => a());
  assert.deepEqual(
    Array.from({ length: 100 }, () => b()),
    xs,
  );
  assert.notDeepEqual(
    Array.from({ length: 100 }, () => c()),
    xs,
  );
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  // Spread over [0, 1): each tenth of the range gets some of 10 000 draws.
  const r = seededRandom(7);
  const buckets = new Array(10).fill(0);
  for (let i = 0; i < 10_000; i++) buckets[Math.floor(r() * 10)] += 1;
  assert.ok(
    buckets.every((n) => n > 800 && n < 1200),
    String(buckets),
  );
});
