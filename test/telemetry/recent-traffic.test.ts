import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RecentTraffic, SLOT_MS, SLOTS } from '../../src/telemetry/index.js';

// The status page's 15-minute window: slots of 10 s, reused in place. Times are given, never
// read from a clock.

const T0 = 1_800_000_000_000; // a slot boundary

function served(t: RecentTraffic, at: number, ms: number, id = 'c-east', provider = 'east', error = false): void {
  t.record(at, ms, error, true, 'gpt', id, provider, []);
}

describe('RecentTraffic', () => {
  it('counts requests and errors per 10-second slot, oldest first, for the last 15 minutes', () => {
    const t = new RecentTraffic();
    served(t, T0, 20);
    served(t, T0 + 9_999, 20, 'c-east', 'east', true);
    served(t, T0 + SLOT_MS, 20);
    t.record(T0 + SLOT_MS, 0.2, false, false, null, null, 'none', []);
    const points = t.series(T0 + SLOT_MS + 1);
    assert.equal(points.length, SLOTS);
    const [before, last] = [points.at(-2), points.at(-1)];
    assert.deepEqual([before?.at, before?.requests, before?.errors], [T0, 2, 1]);
    assert.deepEqual([last?.at, last?.requests, last?.errors], [T0 + SLOT_MS, 2, 0]);
    assert.equal(points[0]?.at, T0 + SLOT_MS - (SLOTS - 1) * SLOT_MS);
    assert.ok(
      points.slice(0, -2).every((p) => p.requests === 0 && p.p50Ms === null),
      'empty slots are zero',
    );
  });

  it('forgets a slot once it is 15 minutes old, even when its ring position is not yet reused', () => {
    const t = new RecentTraffic();
    served(t, T0, 20);
    const later = T0 + SLOTS * SLOT_MS;
    assert.equal(
      t.series(later).reduce((n, p) => n + p.requests, 0),
      0,
    );
    assert.deepEqual(t.models(later, 15 * 60_000), {});
    served(t, later, 20);
    assert.equal(t.series(later).at(-1)?.requests, 1, 'the reused slot starts from zero');
  });

  it('estimates p50 and p99 from the requests that reached an upstream, within 25 %', () => {
    const t = new RecentTraffic();
    for (let i = 1; i <= 100; i++) served(t, T0, i * 10); // 10 ms .. 1000 ms
    for (let i = 0; i < 50; i++) t.record(T0, 0.1, false, false, null, null, 'none', []); // refusals: not latency
    const p = t.series(T0).at(-1);
    assert.equal(p?.requests, 150);
    assert.ok(p?.p50Ms !== null && p?.p50Ms !== undefined && p.p50Ms >= 500 && p.p50Ms <= 625, `p50 ${p?.p50Ms}`);
    assert.ok(p?.p99Ms !== null && p?.p99Ms !== undefined && p.p99Ms >= 990 && p.p99Ms <= 1250, `p99 ${p?.p99Ms}`);
  });

  it('per model: what each candidate served and which candidates failed, over the window asked for', () => {
    const t = new RecentTraffic();
    served(t, T0, 20, 'c-east', 'east');
    served(t, T0 + 6 * 60_000, 20, 'c-east', 'east', true);
    served(t, T0 + 6 * 60_000, 20, 'c-west', 'west');
    t.record(T0 + 6 * 60_000, 30, false, true, 'gpt', 'c-west', 'west', [{ candidate: 'c-east' }]);
    t.record(T0 + 6 * 60_000, 30, true, true, 'gpt', null, 'none', [{ candidate: 'c-east' }, { candidate: 'c-west' }]);
    const now = T0 + 6 * 60_000;
    assert.deepEqual(t.models(now, 5 * 60_000), {
      gpt: {
        served: { 'c-east': { provider: 'east', served: 1, errors: 1 }, 'c-west': { provider: 'west', served: 2, errors: 0 } },
        failed: { 'c-east': 2, 'c-west': 1 },
      },
    });
    assert.equal(t.models(now, 15 * 60_000).gpt?.served['c-east']?.served, 2, 'the longer window sees the older request');
  });
});
