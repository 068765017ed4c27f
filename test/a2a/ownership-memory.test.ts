import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryOwnershipStore } from '../../src/a2a/ownership-memory.js';
import { EAST, LONG, ownershipStoreSuite } from './ownership-suite.js';

// The memory store: the shared suite on an injected clock, then what only one replica's
// store does: a bound on entries with the least recently recorded out first, and the sweep.

let clockMs = Date.UTC(2026, 11, 5, 12, 0, 0);
const now = (): number => clockMs;
const opened: MemoryOwnershipStore[] = [];

ownershipStoreSuite('memory', {
  fresh: async () => {
    const store = new MemoryOwnershipStore({ now });
    opened.push(store);
    return store;
  },
  pass: async (ms) => {
    clockMs += ms;
  },
  cleanup: async () => {
    await Promise.all(opened.map((s) => s.close()));
  },
});

describe('memory ownership store', () => {
  it('when full, drops the least recently recorded id to make room', async () => {
    const store = new MemoryOwnershipStore({ maxEntries: 3, now });
    try {
      for (const id of ['a', 'b', 'c']) await store.record('travel', EAST, { taskId: id, terminal: false }, LONG);
      // Recording `a` again moves it to the back: `b` is now the least recently recorded.
      assert.equal((await store.record('travel', EAST, { taskId: 'a', terminal: false }, LONG)).task, 'kept');
      assert.equal((await store.record('travel', EAST, { taskId: 'd', terminal: false }, LONG)).task, 'recorded');
      assert.deepEqual(await store.lookupMany('travel', 'task', ['a', 'b', 'c', 'd']), [EAST, null, EAST, EAST]);
      assert.equal(await store.tracked(), 3);
    } finally {
      await store.close();
    }
  });

  it('a foreign record neither evicts nor reorders anything', async () => {
    const store = new MemoryOwnershipStore({ maxEntries: 2, now });
    try {
      await store.record('travel', EAST, { taskId: 'a', terminal: false }, LONG);
      await store.record('travel', EAST, { taskId: 'b', terminal: false }, LONG);
      const other = { team: 'research', candidate: 'east' };
      assert.equal((await store.record('travel', other, { taskId: 'a', terminal: false }, LONG)).task, 'foreign');
      assert.deepEqual(await store.lookupMany('travel', 'task', ['a', 'b']), [EAST, EAST]);
    } finally {
      await store.close();
    }
  });

  it('the sweep timer forgets expired ids nobody reads', async () => {
    let localMs = 0;
    const store = new MemoryOwnershipStore({ sweepIntervalMs: 5, now: () => localMs });
    try {
      await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, { activeS: 1, terminalS: 1 });
      assert.equal(store.storedEntries, 2);
      localMs += 1000;
      for (let i = 0; i < 400 && store.storedEntries > 0; i += 1) await new Promise((r) => setTimeout(r, 5));
      assert.equal(store.storedEntries, 0);
    } finally {
      await store.close();
    }
  });

  it('an expired id read is forgotten at once', async () => {
    let localMs = 0;
    const store = new MemoryOwnershipStore({ now: () => localMs });
    try {
      await store.record('travel', EAST, { taskId: 't1', terminal: false }, { activeS: 1, terminalS: 1 });
      localMs += 1000;
      assert.equal(store.storedEntries, 1);
      assert.equal(await store.lookup('travel', 'task', 't1'), null);
      assert.equal(store.storedEntries, 0);
    } finally {
      await store.close();
    }
  });
});
