import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BindingTable, SessionAffinity } from '../../src/routing/index.js';

/** A clock the test moves by hand: TTLs are checked by counting, never by waiting. */
function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void; set: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms), set: (ms) => (t = ms) };
}

describe('SessionAffinity', () => {
  it('returns the bound stable_id until the TTL has passed, then forgets it', () => {
    const c = clock(0);
    const table = new SessionAffinity({ ttlMs: 1000, maxEntries: 10 }, c.now);
    table.bind('s1', 'east/gpt');
    assert.equal(table.get('s1'), 'east/gpt');
    c.set(999);
    assert.equal(table.get('s1'), 'east/gpt');
    c.set(1000);
    assert.equal(table.get('s1'), undefined, 'a binding expires exactly at bind time + TTL');
    assert.equal(table.size, 0, 'reading an expired binding removes it');
  });

  it('an unknown session key has no binding', () => {
    const table = new SessionAffinity({ ttlMs: 1000, maxEntries: 10 }, clock().now);
    assert.equal(table.get('nobody'), undefined);
  });

  it('re-binding a key refreshes its TTL and replaces its stable_id', () => {
    const c = clock(0);
    const table = new SessionAffinity({ ttlMs: 1000, maxEntries: 10 }, c.now);
    table.bind('s1', 'east/gpt');
    c.set(600);
    table.bind('s1', 'west/gpt');
    c.set(1500);
    assert.equal(table.get('s1'), 'west/gpt', 'the refreshed binding lives until 600 + 1000');
    assert.equal(table.size, 1);
    c.set(1600);
    assert.equal(table.get('s1'), undefined);
  });

  it('never holds more than maxEntries bindings; the least recently bound go first', () => {
    const c = clock(0);
    const table = new SessionAffinity({ ttlMs: 60_000, maxEntries: 3 }, c.now);
    for (let i = 0; i < 10; i++) {
      c.advance(1);
      table.bind(`s${i}`, `c${i}`);
      assert.ok(table.size <= 3, `size ${table.size} after ${i + 1} binds`);
    }
    assert.equal(table.size, 3);
    for (let i = 0; i < 7; i++) assert.equal(table.get(`s${i}`), undefined, `s${i} should have been evicted`);
    assert.deepEqual(
      ['s7', 's8', 's9'].map((k) => table.get(k)),
      ['c7', 'c8', 'c9'],
    );
  });

  it('re-binding moves a key to the back of the eviction order', () => {
    const c = clock(0);
    const table = new SessionAffinity({ ttlMs: 60_000, maxEntries: 2 }, c.now);
    table.bind('a', 'A');
    c.advance(1);
    table.bind('b', 'B');
    c.advance(1);
    table.bind('a', 'A2');
    assert.equal(table.size, 2, 're-binding an existing key in a full table evicts nobody');
    c.advance(1);
    table.bind('c', 'C');
    assert.equal(table.get('b'), undefined, 'b was the least recently bound');
    assert.equal(table.get('a'), 'A2');
    assert.equal(table.get('c'), 'C');
  });

  it('a full table drops every expired binding before any live one', () => {
    const c = clock(0);
    const table = new SessionAffinity({ ttlMs: 100, maxEntries: 3 }, c.now);
    table.bind('a', 'A'); // expires at 100
    c.set(10);
    table.bind('b', 'B'); // expires at 110
    c.set(50);
    table.bind('c', 'C'); // expires at 150
    c.set(115); // a and b have expired, c has not
    table.bind('d', 'D');
    assert.equal(table.size, 2, 'both expired bindings were evicted, the live one kept');
    assert.equal(table.get('c'), 'C');
    assert.equal(table.get('d'), 'D');
    assert.equal(table.get('a'), undefined);
    assert.equal(table.get('b'), undefined);
  });

  it('size counts live bindings only: expired ones that were never looked up again are not counted', () => {
    const c = clock(0);
    const table = new SessionAffinity({ ttlMs: 1000, maxEntries: 10 }, c.now);
    table.bind('a', 'A');
    c.set(400);
    table.bind('b', 'B');
    c.set(999);
    assert.equal(table.size, 2);
    c.set(1000);
    assert.equal(table.size, 1, 'a expired at 1000');
    c.set(1400);
    assert.equal(table.size, 0);
  });

  it('a shorter TTL caps existing bindings at now + the new TTL, so size stays exact', () => {
    const c = clock(0);
    const table = new SessionAffinity({ ttlMs: 10_000, maxEntries: 10 }, c.now);
    table.bind('old', 'A');
    c.set(100);
    table.configure({ ttlMs: 50, maxEntries: 10 });
    table.bind('new', 'B');
    assert.equal(table.size, 2);
    c.set(150);
    assert.equal(table.size, 0, 'the old binding expires with the new TTL, not 10 s after it was made');
    assert.equal(table.get('old'), undefined);
  });

  it('configure() applies a new TTL and bound to later bindings', () => {
    const c = clock(0);
    const table = new SessionAffinity({ ttlMs: 1000, maxEntries: 10 }, c.now);
    table.configure({ ttlMs: 50, maxEntries: 1 });
    table.bind('a', 'A');
    table.bind('b', 'B');
    assert.equal(table.size, 1);
    assert.equal(table.get('a'), undefined);
    c.set(50);
    assert.equal(table.get('b'), undefined, 'the new, shorter TTL applies');
  });

  it('delete() forgets a binding at once and says whether there was one', () => {
    const table = new BindingTable<{ provider: string }>({ ttlMs: 1000, maxEntries: 10 }, clock().now);
    table.bind('resp_1', { provider: 'east' });
    assert.equal(table.delete('resp_1'), true);
    assert.equal(table.get('resp_1'), undefined);
    assert.equal(table.delete('resp_1'), false);
    assert.equal(table.size, 0);
  });
});
