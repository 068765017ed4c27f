import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type IdOwner, MAX_OWNED_ID_BYTES, type OwnershipStore, type OwnershipTtl } from '../../src/a2a/ownership.js';

// The behaviour every OwnershipStore shows, run against memory and redis alike. Time passes
// through the fixture: the memory store's injected clock moves, Redis's real one is waited on.

export interface OwnershipStoreFixture {
  /** A fresh, empty store (a new key prefix for redis). */
  fresh(): Promise<OwnershipStore>;
  /** Lets `ms` pass for the stores (redis: a little more, so that Redis has expired what it should). */
  pass(ms: number): Promise<void>;
  cleanup(): Promise<void>;
}

export const EAST: IdOwner = Object.freeze({ team: 'platform', candidate: 'east' });
export const WEST: IdOwner = Object.freeze({ team: 'platform', candidate: 'west' });
export const OTHER_TEAM: IdOwner = Object.freeze({ team: 'research', candidate: 'east' });

/** Long enough that no test outlives it. */
export const LONG: OwnershipTtl = Object.freeze({ activeS: 3600, terminalS: 3600 });
/** A terminal ttl short enough to wait for on a real clock, an active one that never runs out meanwhile. */
const SHORT_TERMINAL: OwnershipTtl = Object.freeze({ activeS: 3600, terminalS: 0.6 });
const SHORT_ACTIVE: OwnershipTtl = Object.freeze({ activeS: 0.6, terminalS: 3600 });
/** Longer than either short ttl. */
const EXPIRED_MS = 900;

export function ownershipStoreSuite(name: string, fixture: OwnershipStoreFixture): void {
  describe(`OwnershipStore contract: ${name}`, () => {
    after(() => fixture.cleanup());

    it('an id recorded is found with its team and candidate; an id never recorded is not', async () => {
      const store = await fixture.fresh();
      const outcome = await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, LONG);
      assert.deepEqual(outcome, { task: 'recorded', context: 'recorded' });
      assert.deepEqual(await store.lookup('travel', 'task', 't1'), EAST);
      assert.deepEqual(await store.lookup('travel', 'context', 'c1'), EAST);
      assert.equal(await store.lookup('travel', 'task', 't2'), null);
      // A task id and a context id are two namespaces: the same string under the other kind is unknown.
      assert.equal(await store.lookup('travel', 'context', 't1'), null);
      assert.equal(await store.lookup('travel', 'task', 'c1'), null);
    });

    it('an answer naming no id records nothing', async () => {
      const store = await fixture.fresh();
      assert.deepEqual(await store.record('travel', EAST, { terminal: false }, LONG), { task: 'none', context: 'none' });
      assert.deepEqual(await store.record('travel', EAST, { contextId: 'c-only', terminal: true }, LONG), {
        task: 'none',
        context: 'recorded',
      });
      assert.equal(await store.tracked(), 1);
    });

    it("the same owner's record again is kept and its ttl refreshed", async () => {
      const store = await fixture.fresh();
      await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, SHORT_ACTIVE);
      await fixture.pass(400);
      assert.deepEqual(await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, SHORT_ACTIVE), {
        task: 'kept',
        context: 'kept',
      });
      await fixture.pass(400);
      // 800 ms after the first record, 400 after the refresh: still owned.
      assert.deepEqual(await store.lookup('travel', 'task', 't1'), EAST);
      assert.deepEqual(await store.lookup('travel', 'context', 'c1'), EAST);
    });

    it("another team's id is foreign and stays its owner's", async () => {
      const store = await fixture.fresh();
      await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, LONG);
      assert.deepEqual(await store.record('travel', OTHER_TEAM, { taskId: 't1', contextId: 'c1', terminal: true }, LONG), {
        task: 'foreign',
        context: 'foreign',
      });
      assert.deepEqual(await store.lookup('travel', 'task', 't1'), EAST);
      assert.deepEqual(await store.lookup('travel', 'context', 'c1'), EAST);
    });

    it('another candidate of the same team is foreign too, and does not make the task terminal', async () => {
      const store = await fixture.fresh();
      await store.record('travel', EAST, { taskId: 't1', terminal: false }, SHORT_TERMINAL);
      assert.deepEqual(await store.record('travel', WEST, { taskId: 't1', terminal: true }, SHORT_TERMINAL), {
        task: 'foreign',
        context: 'none',
      });
      await fixture.pass(EXPIRED_MS);
      assert.deepEqual(await store.lookup('travel', 'task', 't1'), EAST);
    });

    it('a terminal task gets the terminal ttl while its context keeps the active one', async () => {
      const store = await fixture.fresh();
      await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, SHORT_TERMINAL);
      assert.deepEqual(await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: true }, SHORT_TERMINAL), {
        task: 'kept',
        context: 'kept',
      });
      await fixture.pass(EXPIRED_MS);
      assert.equal(await store.lookup('travel', 'task', 't1'), null);
      assert.deepEqual(await store.lookup('travel', 'context', 'c1'), EAST);
    });

    it('terminal wins: a late non-terminal record neither lengthens nor unmarks a terminal task', async () => {
      const store = await fixture.fresh();
      assert.equal((await store.record('travel', EAST, { taskId: 't1', terminal: true }, SHORT_TERMINAL)).task, 'recorded');
      assert.equal((await store.record('travel', EAST, { taskId: 't1', terminal: false }, SHORT_TERMINAL)).task, 'kept');
      await fixture.pass(EXPIRED_MS);
      assert.equal(await store.lookup('travel', 'task', 't1'), null);
    });

    it('an id expires after its ttl and may then be recorded by another owner', async () => {
      const store = await fixture.fresh();
      await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, SHORT_ACTIVE);
      assert.deepEqual(await store.lookup('travel', 'task', 't1'), EAST);
      await fixture.pass(EXPIRED_MS);
      assert.equal(await store.lookup('travel', 'task', 't1'), null);
      assert.deepEqual(await store.lookupMany('travel', 'context', ['c1']), [null]);
      assert.deepEqual(await store.record('travel', OTHER_TEAM, { taskId: 't1', contextId: 'c1', terminal: false }, LONG), {
        task: 'recorded',
        context: 'recorded',
      });
      assert.deepEqual(await store.lookup('travel', 'task', 't1'), OTHER_TEAM);
    });

    it('the same id under two agents is two entries', async () => {
      const store = await fixture.fresh();
      await store.record('travel', EAST, { taskId: 'shared', contextId: 'shared-ctx', terminal: false }, LONG);
      assert.equal(await store.lookup('billing', 'task', 'shared'), null);
      assert.deepEqual(await store.record('billing', OTHER_TEAM, { taskId: 'shared', contextId: 'shared-ctx', terminal: false }, LONG), {
        task: 'recorded',
        context: 'recorded',
      });
      assert.deepEqual(await store.lookup('travel', 'task', 'shared'), EAST);
      assert.deepEqual(await store.lookup('billing', 'task', 'shared'), OTHER_TEAM);
      // An agent name holding the separator makes no entry of another agent's.
      assert.equal(await store.lookup('travel:task', 'task', 'shared'), null);
    });

    it('odd ids (newlines, colons, glob and JSON characters, unicode) are distinct entries found as recorded', async () => {
      const store = await fixture.fresh();
      const odd = ['a\nb', 'a:b', 'a:task:b', '*', '[x]?\\', '"quoted",', ' ', 'é', '🙂', 'a\u0000b'];
      for (const [i, id] of odd.entries()) {
        const owner = { team: `team-${i}`, candidate: 'east' };
        assert.equal((await store.record('travel', owner, { taskId: id, terminal: false }, LONG)).task, 'recorded', JSON.stringify(id));
      }
      for (const [i, id] of odd.entries()) {
        assert.deepEqual(await store.lookup('travel', 'task', id), { team: `team-${i}`, candidate: 'east' }, JSON.stringify(id));
      }
      assert.equal(await store.lookup('travel', 'task', 'a'), null);
      assert.equal(await store.lookup('travel', 'task', 'ab'), null);
    });

    it('an id over the byte bound, empty, or not well-formed is not recorded and never found', async () => {
      const store = await fixture.fresh();
      const atBound = 'x'.repeat(MAX_OWNED_ID_BYTES);
      const overBound = 'x'.repeat(MAX_OWNED_ID_BYTES + 1);
      // Within the bound in characters, over it in UTF-8 bytes.
      const wide = 'é'.repeat(MAX_OWNED_ID_BYTES / 2 + 1);
      const huge = 'y'.repeat(10 * 1024);
      for (const id of [overBound, wide, huge, '', 'lone \ud800 surrogate']) {
        assert.deepEqual(await store.record('travel', EAST, { taskId: id, contextId: id, terminal: false }, LONG), {
          task: 'none',
          context: 'none',
        });
        assert.equal(await store.lookup('travel', 'task', id), null);
        assert.equal(await store.lookup('travel', 'context', id), null);
      }
      assert.equal((await store.record('travel', EAST, { taskId: atBound, terminal: false }, LONG)).task, 'recorded');
      assert.deepEqual(await store.lookup('travel', 'task', atBound), EAST);
      assert.equal(await store.tracked(), 1);
    });

    it('lookupMany answers in order, null where unknown, foreign owners as they are', async () => {
      const store = await fixture.fresh();
      await store.record('travel', EAST, { taskId: 't1', terminal: false }, LONG);
      await store.record('travel', OTHER_TEAM, { taskId: 't2', terminal: true }, LONG);
      await store.record('travel', WEST, { taskId: 't3', terminal: false }, LONG);
      assert.deepEqual(await store.lookupMany('travel', 'task', ['t3', 'missing', 't1', 'x'.repeat(300), 't2', 't1']), [
        WEST,
        null,
        EAST,
        null,
        OTHER_TEAM,
        EAST,
      ]);
      assert.deepEqual(await store.lookupMany('travel', 'task', []), []);
      assert.deepEqual(await store.lookupMany('billing', 'task', ['t1']), [null]);
    });

    it('tracked counts the live ids: each task and context once, not foreign records, not expired ones', async () => {
      const store = await fixture.fresh();
      assert.equal(await store.tracked(), 0);
      await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, LONG);
      await store.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, LONG);
      await store.record('travel', OTHER_TEAM, { taskId: 't1', contextId: 'c1', terminal: false }, LONG);
      await store.record('billing', EAST, { taskId: 't1', terminal: false }, LONG);
      assert.equal(await store.tracked(), 3);
      await store.record('travel', EAST, { taskId: 'short', terminal: false }, SHORT_ACTIVE);
      assert.equal(await store.tracked(), 4);
      await fixture.pass(EXPIRED_MS);
      assert.equal(await store.tracked(), 3);
    });
  });
}
