import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import {
  DatabaseReplicaRecords,
  migrate,
  openDatabase,
  RedisReplicaRecords,
  type ReplicaRecord,
  type ReplicaRecords,
} from '../../src/database/index.js';
import { postgresDatabase, sqliteDatabase } from '../support/databases.js';
import { deleteKeysWithPrefix } from '../support/redis.js';

// The replicas' heartbeat records, one suite for the three places they are kept: SQLite,
// Postgres (the `replicas` table of schema 6) and a Redis hash under the key prefix.

const REDIS_URL = process.env.SWITCHYARD_TEST_REDIS ?? 'redis://127.0.0.1:6379';

function record(instance: string, heartbeatAt: string, digest = 'a'.repeat(64)): ReplicaRecord {
  return {
    instance,
    generation: 3,
    digest,
    built_at: '2026-12-05T10:00:00.000Z',
    heartbeat_at: heartbeatAt,
    digest_since: '2026-12-05T10:00:01.000Z',
    last_reload_error: null,
  };
}

interface Store {
  readonly records: ReplicaRecords;
  close(): Promise<void>;
}

const stores: Array<{ name: string; open: () => Promise<Store | { skip: string }> }> = [
  {
    name: 'sqlite',
    open: async () => {
      const target = sqliteDatabase();
      const database = openDatabase({ url: target.url });
      await migrate(database.db, database.engine);
      return {
        records: new DatabaseReplicaRecords(database),
        close: async () => {
          await database.close();
          await target.drop();
        },
      };
    },
  },
  {
    name: 'postgres',
    open: async () => {
      const target = await postgresDatabase();
      if ('skip' in target) return target;
      const database = openDatabase({ url: target.url });
      await migrate(database.db, database.engine);
      return {
        records: new DatabaseReplicaRecords(database),
        close: async () => {
          await database.close();
          await target.drop();
        },
      };
    },
  },
  {
    name: 'redis',
    open: async () => {
      const prefix = `switchyard-test-replica-records-${process.pid}:`;
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      return {
        records: new RedisReplicaRecords({ redis, keyPrefix: prefix, expireMs: 60_000 }),
        close: async () => {
          redis.disconnect();
          await deleteKeysWithPrefix(REDIS_URL, prefix);
        },
      };
    },
  },
];

for (const { name, open } of stores) {
  describe(`replica records in ${name}`, () => {
    let store: Store | null = null;
    let skip: string | null = null;
    const ready = (async () => {
      const opened = await open();
      if ('skip' in opened) skip = opened.skip;
      else store = opened;
    })();
    after(async () => {
      await ready;
      await store?.close();
    });

    it("a beat writes the replica's record, and its next beat replaces it", async (t) => {
      await ready;
      if (skip !== null) return t.skip(skip);
      const records = (store as Store).records;
      await records.beat(record('a:1', '2026-12-05T10:00:02.000Z'), '2026-12-05T09:00:00.000Z');
      const next = { ...record('a:1', '2026-12-05T10:00:03.000Z', 'b'.repeat(64)), generation: 4, last_reload_error: 'x: refused' };
      await records.beat(next, '2026-12-05T09:00:00.000Z');
      assert.deepEqual(await records.list(), [next]);
    });

    it('a beat deletes the records of replicas gone since before goneBefore, never its own; remove deletes one', async (t) => {
      await ready;
      if (skip !== null) return t.skip(skip);
      const records = (store as Store).records;
      await records.beat(record('b:2', '2026-12-05T08:00:00.000Z'), '2026-12-05T07:00:00.000Z');
      await records.beat(record('c:3', '2026-12-05T09:59:00.000Z'), '2026-12-05T07:00:00.000Z');
      assert.deepEqual(
        (await records.list()).map((r) => r.instance),
        ['a:1', 'b:2', 'c:3'],
      );
      // a:1 beats with a horizon after b:2's last heartbeat: b:2 is gone, c:3 stays.
      await records.beat(record('a:1', '2026-12-05T10:00:04.000Z'), '2026-12-05T09:00:00.000Z');
      assert.deepEqual(
        (await records.list()).map((r) => r.instance),
        ['a:1', 'c:3'],
      );
      // Its own record is written, whatever the horizon.
      await records.beat(record('c:3', '2026-12-05T09:59:30.000Z'), '2026-12-05T11:00:00.000Z');
      assert.deepEqual(
        (await records.list()).map((r) => r.instance),
        ['c:3'],
      );
      await records.remove('c:3');
      assert.deepEqual(await records.list(), []);
    });
  });
}

describe('replica records in Redis', () => {
  it('expire with the last heartbeat of any replica, and a field that is no record is ignored', async () => {
    const prefix = `switchyard-test-replica-expiry-${process.pid}:`;
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const records = new RedisReplicaRecords({ redis, keyPrefix: prefix, expireMs: 30_000 });
      await records.beat(record('a:1', new Date().toISOString()), new Date(0).toISOString());
      const ttl = await redis.pttl(`${prefix}replicas`);
      assert.ok(ttl > 0 && ttl <= 30_000, `pttl ${ttl}`);
      await redis.hset(`${prefix}replicas`, 'junk', 'not json');
      assert.deepEqual(
        (await records.list()).map((r) => r.instance),
        ['a:1'],
      );
    } finally {
      redis.disconnect();
      await deleteKeysWithPrefix(REDIS_URL, prefix);
    }
  });
});
