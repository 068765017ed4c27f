import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ReplicaRecord } from '../../src/database/index.js';
import { heartbeatTiming, markBehind } from '../../src/server/heartbeat.js';

// Which replicas are behind, from their records alone: the newest digest is the one of the
// most recently built generation among the replicas heard from lately, and a replica on
// another one is behind once that digest has served for longer than the bound; so is one
// whose heartbeat has been silent that long.

const T0 = Date.parse('2026-12-05T10:00:00.000Z');
const at = (ms: number): string => new Date(T0 + ms).toISOString();

function row(instance: string, digest: string, builtMs: number, heartbeatMs: number, sinceMs = builtMs): ReplicaRecord {
  return {
    instance,
    generation: 1,
    digest,
    built_at: at(builtMs),
    heartbeat_at: at(heartbeatMs),
    digest_since: at(sinceMs),
    last_reload_error: null,
  };
}

const behindOf = (rows: ReadonlyArray<{ instance: string; behind: boolean }>): Record<string, boolean> =>
  Object.fromEntries(rows.map((r) => [r.instance, r.behind]));

describe('markBehind', () => {
  it('replicas on one digest, all heard from, are none behind', () => {
    const { newest, rows } = markBehind([row('a', 'd1', 0, 9_800), row('b', 'd1', 100, 9_900)], T0 + 10_000, 1000);
    assert.equal(newest, 'd1');
    assert.deepEqual(behindOf(rows), { a: false, b: false });
  });

  it('one on an older digest is behind only once the newest has served longer than the bound', () => {
    const records = [row('a', 'old', 0, 5_900), row('b', 'new', 5_000, 5_950)];
    assert.deepEqual(behindOf(markBehind(records, T0 + 6_000, 1000).rows), { a: false, b: false }, 'still within the bound');
    const later = [row('a', 'old', 0, 6_900), row('b', 'new', 5_000, 6_950)];
    const { newest, rows } = markBehind(later, T0 + 7_000, 1000);
    assert.equal(newest, 'new');
    assert.deepEqual(behindOf(rows), { a: true, b: false });
  });

  it('the newest digest is counted from when any replica first served it', () => {
    // c rebuilt the same topology later; b has served it since 5 s.
    const records = [row('a', 'old', 0, 6_400), row('b', 'new', 5_000, 6_400), row('c', 'new', 6_000, 6_400)];
    assert.deepEqual(behindOf(markBehind(records, T0 + 6_500, 1000).rows), { a: true, b: false, c: false });
  });

  it('a silent replica is behind, and its newer build does not make the newest digest', () => {
    const records = [row('a', 'd1', 0, 9_900), row('gone', 'd2', 8_000, 8_500)];
    const { newest, rows } = markBehind(records, T0 + 10_000, 1000);
    assert.equal(newest, 'd1', "a replica not heard from lately does not set the fleet's newest digest");
    assert.deepEqual(behindOf(rows), { a: false, gone: true });
  });

  it('with every replica silent, the newest build still names the newest digest', () => {
    const { newest, rows } = markBehind([row('a', 'd1', 0, 0), row('b', 'd2', 10, 0)], T0 + 60_000, 1000);
    assert.equal(newest, 'd2');
    assert.deepEqual(behindOf(rows), { a: true, b: true });
  });
});

describe('heartbeatTiming', () => {
  it('beats every half recheck_ms, at least 250 ms apart, every 2.5 s without one', () => {
    assert.deepEqual(heartbeatTiming(10_000), { intervalMs: 5000, behindAfterMs: 10_000, goneAfterMs: 100_000 });
    assert.deepEqual(heartbeatTiming(400), { intervalMs: 250, behindAfterMs: 500, goneAfterMs: 60_000 });
    assert.deepEqual(heartbeatTiming(0), { intervalMs: 2500, behindAfterMs: 5000, goneAfterMs: 60_000 });
    assert.deepEqual(heartbeatTiming(null), { intervalMs: 2500, behindAfterMs: 5000, goneAfterMs: 60_000 });
  });
});
