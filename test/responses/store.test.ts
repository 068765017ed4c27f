import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { type Database, migrate, openDatabase } from '../../src/database/index.js';
import {
  createResponseStore,
  type Item,
  MemoryResponseStore,
  newId,
  RedisResponseStore,
  type ResponseRecord,
  type ResponseStore,
  ResponseStoreUnavailable,
} from '../../src/responses/index.js';
import { postgresDatabase, sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { deleteKeysWithPrefix, freePort, startRedis, stopRedis } from '../support/redis.js';

// One behaviour suite for the three backends of the response store: what the request path
// relies on holds whichever one a deployment picks. Each backend also says how it forgets
// what it holds now (a clock moved, a TTL waited out, a prune past retention).

const REDIS_URL = 'redis://127.0.0.1:6379';

interface Backend {
  readonly store: ResponseStore;
  /** Makes everything stored so far old enough to be gone; resolves when it is. */
  ageOut(): Promise<void>;
  cleanup(): Promise<void>;
}

const message = (text: string): Item => ({ id: newId('msg'), type: 'message', role: 'user', content: [{ type: 'input_text', text }] });

function response(overrides: Partial<ResponseRecord> = {}): ResponseRecord {
  const id = overrides.id ?? newId('resp');
  const output: Item[] = [{ id: newId('msg'), type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] }];
  return {
    id,
    team: 'platform',
    model: 'gpt-test',
    createdAt: Math.floor(Date.now() / 1000),
    ancestors: [],
    conversation: null,
    input: [message('hello')],
    response: { id, object: 'response', status: 'completed', output, usage: { input_tokens: 1, output_tokens: 1 } },
    ...overrides,
  };
}

function outputOf(r: ResponseRecord): Item[] {
  return r.response.output as Item[];
}

function behaviour(name: string, open: () => Promise<Backend | { skip: string }>): void {
  describe(`response store: ${name}`, () => {
    let backend: Backend;
    let store: ResponseStore;
    let skip: string | undefined;
    before(async () => {
      const opened = await open();
      if ('skip' in opened) skip = opened.skip;
      else {
        backend = opened;
        store = opened.store;
      }
    });
    after(async () => {
      if (skip === undefined) await backend.cleanup();
    });

    it('a stored response reads back as it was written; an unknown id is undefined', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const r = response({ ancestors: ['resp_a', 'resp_b'], conversation: 'conv_x', team: null });
      await store.putResponse(r);
      assert.deepEqual(await store.getResponse(r.id), r);
      assert.equal(await store.getResponse(newId('resp')), undefined);
    });

    it('getResponses answers in the order asked, a missing one undefined in its place', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const a = response();
      const b = response();
      await store.putResponse(a);
      await store.putResponse(b);
      const missing = newId('resp');
      const got = await store.getResponses([b.id, missing, a.id]);
      assert.deepEqual(
        got.map((r) => r?.id),
        [b.id, undefined, a.id],
      );
      assert.deepEqual(await store.getResponses([]), []);
    });

    it("an item of a stored response (input or output) is found by its id, with the response's team", async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const r = response({ team: 'blue' });
      await store.putResponse(r);
      const input = r.input[0] as Item;
      const output = outputOf(r)[0] as Item;
      assert.deepEqual(await store.getResponseItem(input.id), { item: input, team: 'blue' });
      assert.deepEqual(await store.getResponseItem(output.id), { item: output, team: 'blue' });
      assert.equal(await store.getResponseItem(newId('msg')), undefined);
    });

    it('a response a provider wrote keeps that provider as its origin, and its items say so', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const r = response({ team: 'blue', origin: 'openai|https://api.example.com/v1' });
      await store.putResponse(r);
      assert.deepEqual(await store.getResponse(r.id), r);
      const output = outputOf(r)[0] as Item;
      assert.deepEqual(await store.getResponseItem(output.id), { item: output, team: 'blue', origin: 'openai|https://api.example.com/v1' });
    });

    it('a deleted response is gone, and so are its items; deleting it again is false', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const r = response();
      await store.putResponse(r);
      assert.equal(await store.deleteResponse(r.id), true);
      assert.equal(await store.getResponse(r.id), undefined);
      assert.equal(await store.getResponseItem((r.input[0] as Item).id), undefined);
      assert.equal(await store.deleteResponse(r.id), false);
    });

    it('a conversation is created with its items, updated, and deleted with them', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const id = newId('conv');
      const record = { id, team: 'platform', createdAt: Math.floor(Date.now() / 1000), metadata: { topic: 'a' } };
      const first = message('one');
      await store.createConversation(record, [first]);
      assert.deepEqual(await store.getConversation(id), record);
      assert.deepEqual(await store.updateConversation(id, { topic: 'b' }), { ...record, metadata: { topic: 'b' } });
      assert.deepEqual(await store.getConversation(id), { ...record, metadata: { topic: 'b' } });
      assert.deepEqual(await store.getItem(id, first.id), first);
      assert.equal(await store.deleteConversation(id), true);
      assert.equal(await store.getConversation(id), undefined);
      assert.equal(await store.getItem(id, first.id), undefined);
      assert.equal(await store.listItems(id, { limit: 10, order: 'asc' }), undefined);
      assert.equal(await store.deleteConversation(id), false);
      assert.equal(await store.updateConversation(id, {}), undefined);
    });

    it('appended items follow the existing ones in order; appending to no conversation is false', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const id = newId('conv');
      const items = ['a', 'b', 'c', 'd', 'e'].map(message);
      await store.createConversation({ id, team: null, createdAt: Math.floor(Date.now() / 1000), metadata: {} }, items.slice(0, 2));
      assert.equal(await store.appendItems(id, items.slice(2, 4)), true);
      assert.equal(await store.appendItems(id, items.slice(4)), true);
      assert.deepEqual(await store.allItems(id, 100), items);
      assert.equal(await store.appendItems(newId('conv'), [message('x')]), false);
      assert.equal(await store.allItems(newId('conv'), 100), undefined);
    });

    it('allItems gives at most max items, oldest first', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const id = newId('conv');
      const items = ['a', 'b', 'c', 'd'].map(message);
      await store.createConversation({ id, team: null, createdAt: Math.floor(Date.now() / 1000), metadata: {} }, items);
      assert.deepEqual(await store.allItems(id, 3), items.slice(0, 3));
      assert.deepEqual(await store.allItems(id, 0), []);
      const empty = newId('conv');
      await store.createConversation({ id: empty, team: null, createdAt: Math.floor(Date.now() / 1000), metadata: {} }, []);
      assert.deepEqual(await store.allItems(empty, 10), []);
    });

    it('listItems pages after a cursor, in either order, and says whether more follow', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const id = newId('conv');
      const items = ['a', 'b', 'c', 'd', 'e'].map(message);
      await store.createConversation({ id, team: null, createdAt: Math.floor(Date.now() / 1000), metadata: {} }, items);
      const ids = (page: { data: readonly Item[] } | undefined) => page?.data.map((i) => i.id);
      const p1 = await store.listItems(id, { limit: 2, order: 'asc' });
      assert.deepEqual(ids(p1), [items[0]?.id, items[1]?.id]);
      assert.equal(p1?.hasMore, true);
      const p2 = await store.listItems(id, { limit: 2, order: 'asc', after: items[1]?.id });
      assert.deepEqual(ids(p2), [items[2]?.id, items[3]?.id]);
      assert.equal(p2?.hasMore, true);
      const p3 = await store.listItems(id, { limit: 2, order: 'asc', after: items[3]?.id });
      assert.deepEqual(ids(p3), [items[4]?.id]);
      assert.equal(p3?.hasMore, false);
      const exact = await store.listItems(id, { limit: 5, order: 'asc' });
      assert.equal(exact?.data.length, 5);
      assert.equal(exact?.hasMore, false);
      const d1 = await store.listItems(id, { limit: 3, order: 'desc' });
      assert.deepEqual(ids(d1), [items[4]?.id, items[3]?.id, items[2]?.id]);
      assert.equal(d1?.hasMore, true);
      const d2 = await store.listItems(id, { limit: 3, order: 'desc', after: items[2]?.id });
      assert.deepEqual(ids(d2), [items[1]?.id, items[0]?.id]);
      assert.equal(d2?.hasMore, false);
      assert.deepEqual(await store.listItems(id, { limit: 3, order: 'asc', after: newId('msg') }), { data: [], hasMore: false });
    });

    it('a deleted item leaves the others in order; deleting it again is false', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const id = newId('conv');
      const items = ['a', 'b', 'c'].map(message);
      await store.createConversation({ id, team: null, createdAt: Math.floor(Date.now() / 1000), metadata: {} }, items);
      assert.equal(await store.deleteItem(id, items[1]?.id as string), true);
      assert.deepEqual(await store.allItems(id, 10), [items[0], items[2]]);
      assert.equal(await store.getItem(id, items[1]?.id as string), undefined);
      assert.equal(await store.deleteItem(id, items[1]?.id as string), false);
      assert.equal(await store.appendItems(id, [items[1] as Item]), true);
      assert.deepEqual(await store.allItems(id, 10), [items[0], items[2], items[1]]);
    });

    it('what is past its time (TTL or retention) is gone', async (t) => {
      if (skip !== undefined) return t.skip(skip);
      const r = response({ createdAt: Math.floor(Date.now() / 1000) });
      const id = newId('conv');
      await store.putResponse(r);
      await store.createConversation({ id, team: null, createdAt: Math.floor(Date.now() / 1000), metadata: {} }, [message('x')]);
      await backend.ageOut();
      assert.equal(await store.getResponse(r.id), undefined);
      assert.equal(await store.getResponseItem((r.input[0] as Item).id), undefined);
      assert.equal(await store.getConversation(id), undefined);
      assert.equal(await store.allItems(id, 10), undefined);
    });
  });
}

behaviour('memory', async () => {
  let nowMs = Date.now();
  const store = createResponseStore({ store: 'memory', ttlS: 60, maxEntries: 1000 }, { now: () => nowMs });
  return {
    store,
    ageOut: async () => {
      nowMs += 61_000;
    },
    cleanup: () => store.close(),
  };
});

behaviour('redis', async () => {
  const keyPrefix = `sy-test-responses-${process.pid}-${Math.random().toString(36).slice(2, 8)}:`;
  const store = createResponseStore({ store: 'redis', ttlS: 1, redisUrl: REDIS_URL, keyPrefix });
  if (!(await (store as RedisResponseStore).ready(2000))) {
    await store.close();
    return { skip: `no Redis at ${REDIS_URL}` };
  }
  return {
    store,
    // Redis expires by its own clock: the 1 s TTL is waited out.
    ageOut: () => new Promise((r) => setTimeout(r, 1200)),
    cleanup: async () => {
      await store.close();
      await deleteKeysWithPrefix(REDIS_URL, keyPrefix);
    },
  };
});

async function databaseBackend(test: TestDatabase | { skip: string }): Promise<Backend | { skip: string }> {
  if ('skip' in test) return test;
  const database: Database = openDatabase({ url: test.url });
  const migrated = await migrate(database.db, database.engine);
  assert.ok(migrated.ok);
  const retentionDays = 30;
  const store = createResponseStore({ store: 'database', retentionDays }, { database });
  return {
    store,
    ageOut: async () => {
      const pruned = await (store.prune as (nowMs: number) => Promise<number>)(Date.now() + (retentionDays + 1) * 86_400_000);
      assert.ok(pruned >= 1, `prune dropped ${pruned} responses`);
    },
    cleanup: async () => {
      await store.close();
      await database.close();
      await test.drop();
    },
  };
}

behaviour('database (SQLite)', async () => databaseBackend(sqliteDatabase()));
behaviour('database (Postgres)', async () => databaseBackend(await postgresDatabase()));

describe('response store: memory bounds', () => {
  it('past max_entries the oldest response goes first, and its items with it', async () => {
    const store = new MemoryResponseStore({ ttlMs: 60_000, maxEntries: 2 });
    const [a, b, c] = [response(), response(), response()];
    for (const r of [a, b, c]) await store.putResponse(r);
    assert.deepEqual(
      (await store.getResponses([a.id, b.id, c.id])).map((r) => r?.id),
      [undefined, b.id, c.id],
    );
    assert.equal(await store.getResponseItem((a.input[0] as Item).id), undefined);
  });

  it('past max_entries the conversation written longest ago goes first', async () => {
    const store = new MemoryResponseStore({ ttlMs: 60_000, maxEntries: 2 });
    const ids = [newId('conv'), newId('conv'), newId('conv')];
    const create = (id: string) => store.createConversation({ id, team: null, createdAt: 0, metadata: {} }, []);
    await create(ids[0] as string);
    await create(ids[1] as string);
    // A write makes the first the newest: the second is then the oldest.
    await store.appendItems(ids[0] as string, [message('x')]);
    await create(ids[2] as string);
    assert.ok(await store.getConversation(ids[0] as string));
    assert.equal(await store.getConversation(ids[1] as string), undefined);
    assert.ok(await store.getConversation(ids[2] as string));
  });

  it("a write restarts a conversation's expiry", async () => {
    let nowMs = 0;
    const store = new MemoryResponseStore({ ttlMs: 1000, maxEntries: 10, now: () => nowMs });
    const id = newId('conv');
    await store.createConversation({ id, team: null, createdAt: 0, metadata: {} }, []);
    nowMs = 900;
    await store.appendItems(id, [message('x')]);
    nowMs = 1800;
    assert.ok(await store.getConversation(id));
    nowMs = 1901;
    assert.equal(await store.getConversation(id), undefined);
  });
});

describe('response store: redis unreachable', () => {
  it('fails fast with ResponseStoreUnavailable while Redis is down (at start or mid-run), and serves again once it is back', async () => {
    const port = await freePort();
    const keyPrefix = 'sy-test-responses-down:';
    const store = new RedisResponseStore({ url: `redis://127.0.0.1:${port}`, keyPrefix, ttlS: 60, commandTimeoutMs: 300 });
    let redis: ChildProcess | null = null;
    try {
      const r = response();
      for (const call of [() => store.getResponse(r.id), () => store.putResponse(r), () => store.appendItems('conv_x', [message('x')])]) {
        const started = performance.now();
        await assert.rejects(call(), ResponseStoreUnavailable);
        assert.ok(performance.now() - started < 500, 'a call to a down store must fail within the command timeout');
      }
      redis = await startRedis(port);
      assert.equal(await store.ready(5000), true);
      await store.putResponse(r);
      assert.deepEqual(await store.getResponse(r.id), r);
      // Down again mid-run: the connection is lost, calls fail fast, and it comes back once more.
      await stopRedis(redis);
      redis = null;
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = performance.now();
      await assert.rejects(store.getResponse(r.id), ResponseStoreUnavailable);
      assert.ok(performance.now() - started < 500);
      redis = await startRedis(port);
      assert.equal(await store.ready(5000), true);
      assert.equal(await store.getResponse(r.id), undefined, 'a Redis that restarted without persistence holds nothing');
      await store.putResponse(r);
      assert.deepEqual(await store.getResponse(r.id), r);
    } finally {
      await store.close();
      if (redis !== null) await stopRedis(redis);
    }
  });
});

describe('response ids', () => {
  it('carry the prefix and 24 random bytes, and do not repeat', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newId('resp')));
    assert.equal(ids.size, 1000);
    for (const id of ids) assert.match(id, /^resp_[0-9a-f]{48}$/);
    assert.match(newId('fc'), /^fc_[0-9a-f]{48}$/);
  });
});

describe('response store: database retention', () => {
  it('prune drops, in batches, only what was created before retention, conversations too', async () => {
    const test = sqliteDatabase();
    const database = openDatabase({ url: test.url });
    try {
      assert.ok((await migrate(database.db, database.engine)).ok);
      const store = createResponseStore({ store: 'database', retentionDays: 1 }, { database });
      const nowS = Math.floor(Date.now() / 1000);
      const old = Array.from({ length: 1200 }, () => response({ createdAt: nowS - 2 * 86_400 }));
      for (const r of old) await store.putResponse(r);
      const recent = response({ createdAt: nowS });
      await store.putResponse(recent);
      const oldConv = newId('conv');
      const newConv = newId('conv');
      await store.createConversation({ id: oldConv, team: null, createdAt: nowS - 2 * 86_400, metadata: {} }, [message('a')]);
      await store.createConversation({ id: newConv, team: null, createdAt: nowS, metadata: {} }, [message('b')]);
      assert.equal(await (store.prune as (nowMs: number) => Promise<number>)(Date.now()), 1200);
      assert.equal(await store.getResponse(old[0]?.id as string), undefined);
      assert.ok(await store.getResponse(recent.id));
      assert.equal(await store.getConversation(oldConv), undefined);
      assert.ok(await store.getConversation(newConv));
      // A reload's longer retention applies at the next prune: two days on, the recent one stays.
      store.configure({ ttlS: 60, maxEntries: 10, retentionDays: 3 });
      assert.equal(await (store.prune as (nowMs: number) => Promise<number>)(Date.now() + 2 * 86_400_000), 0);
      assert.ok(await store.getResponse(recent.id));
    } finally {
      await database.close();
      await test.drop();
    }
  });
});
