import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { OwnershipStoreError } from '../../src/a2a/ownership.js';
import { RedisOwnershipStore } from '../../src/a2a/ownership-redis.js';
import { freePort, startRedis, stopRedis } from '../support/redis.js';
import { EAST, LONG, OTHER_TEAM, ownershipStoreSuite, WEST } from './ownership-suite.js';

// The Redis store: the shared suite on a private redis-server (time is Redis's own, so the
// suite waits for expiry), then its key layout, the fleet case (several stores, one Redis),
// and its failures: Redis gone, with and without an offline queue on the connection.

let port = 0;
let server: ChildProcess | undefined;
const connections: Redis[] = [];

/** A connection as the gateway makes them: no offline queue, no retries, a command timeout. */
function connect(at = port): Redis {
  const redis = new Redis({
    host: '127.0.0.1',
    port: at,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 2000,
    retryStrategy: (times) => Math.min(50 * times, 500),
  });
  redis.on('error', () => undefined);
  connections.push(redis);
  return redis;
}

async function connected(redis: Redis): Promise<Redis> {
  for (let i = 0; i < 200 && redis.status !== 'ready'; i += 1) await new Promise((r) => setTimeout(r, 10));
  assert.equal(redis.status, 'ready', 'Redis did not become ready');
  return redis;
}

/** A store on its own connection, under `keyPrefix`; its timeout is generous, since only the failure tests are about slowness. */
async function open(keyPrefix = `sy-test:${randomUUID()}:`, commandTimeoutMs = 5000): Promise<RedisOwnershipStore> {
  return new RedisOwnershipStore({ redis: await connected(connect()), keyPrefix, commandTimeoutMs });
}

before(async () => {
  port = await freePort();
  server = await startRedis(port);
});

after(async () => {
  for (const c of connections) c.disconnect();
  if (server !== undefined) await stopRedis(server);
});

ownershipStoreSuite('redis', {
  fresh: () => open(),
  // Redis expires a key once its time is past: a little more than asked, for the clocks' grain.
  pass: (ms) => new Promise((resolve) => setTimeout(resolve, ms + 20)),
  cleanup: async () => undefined,
});

describe('redis ownership store', () => {
  let admin: Redis;
  before(async () => {
    admin = await connected(connect());
  });

  it("keeps an id as a hash under the prefix's a2a: namespace, with a fixed-size key whatever the id", async () => {
    const prefix = `layout:${randomUUID()}:`;
    const store = await open(prefix);
    const id = `${'line\n:colon*'.repeat(20)}`;
    await store.record('travel agent', EAST, { taskId: id, contextId: 'c1', terminal: false }, LONG);
    const keys = (await admin.keys(`${prefix}*`)).sort();
    assert.equal(keys.length, 3);
    assert.ok(keys.includes(`${prefix}a2a:tracked`));
    const entries = keys.filter((k) => k !== `${prefix}a2a:tracked`);
    for (const key of entries) {
      assert.match(key.slice(prefix.length), /^a2a:travel%20agent:(task|context):[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(await admin.hgetall(key), { team: 'platform', candidate: 'east', terminal: '0' });
      const pttl = await admin.pttl(key);
      assert.ok(pttl > 3_000_000 && pttl <= 3_600_000, `pttl ${pttl}`);
    }
    assert.ok((await admin.pttl(`${prefix}a2a:tracked`)) > 3_000_000);
  });

  it('a terminal task is marked and keeps the terminal ttl through a late non-terminal record', async () => {
    const prefix = `terminal:${randomUUID()}:`;
    const store = await open(prefix);
    const ttl = { activeS: 3600, terminalS: 60 };
    await store.record('travel', EAST, { taskId: 't1', terminal: false }, ttl);
    await store.record('travel', EAST, { taskId: 't1', terminal: true }, ttl);
    await store.record('travel', EAST, { taskId: 't1', terminal: false }, ttl);
    const [key] = (await admin.keys(`${prefix}a2a:travel:task:*`)) as [string];
    assert.equal(await admin.hget(key, 'terminal'), '1');
    const pttl = await admin.pttl(key);
    assert.ok(pttl > 0 && pttl <= 60_000, `pttl ${pttl}`);
  });

  it('the fleet case: stores on other connections see each other’s records', async () => {
    const prefix = `fleet:${randomUUID()}:`;
    const [a, b] = [await open(prefix), await open(prefix)];
    await a.record('travel', EAST, { taskId: 't1', contextId: 'c1', terminal: false }, LONG);
    assert.deepEqual(await b.lookup('travel', 'task', 't1'), EAST);
    assert.deepEqual(await b.lookupMany('travel', 'context', ['c1', 'c2']), [EAST, null]);
    assert.deepEqual(await b.record('travel', WEST, { taskId: 't1', contextId: 'c1', terminal: false }, LONG), {
      task: 'foreign',
      context: 'foreign',
    });
    assert.equal(await b.tracked(), 2);
    // Another deployment's prefix is another namespace.
    assert.equal(await (await open()).lookup('travel', 'task', 't1'), null);
  });

  it('records of one id racing from many replicas leave exactly one owner', async () => {
    const prefix = `race:${randomUUID()}:`;
    const stores = await Promise.all([open(prefix), open(prefix), open(prefix), open(prefix)]);
    const owners = Array.from({ length: 40 }, (_, i) => ({ team: `team-${i % 5}`, candidate: `c-${i}` }));
    const outcomes = await Promise.all(
      owners.map((o, i) => stores[i % stores.length]!.record('travel', o, { taskId: 'contested', terminal: false }, LONG)),
    );
    const winners = outcomes.flatMap((r, i) => (r.task === 'recorded' ? [owners[i]] : []));
    assert.equal(winners.length, 1);
    assert.equal(outcomes.filter((r) => r.task === 'foreign').length, owners.length - 1);
    assert.deepEqual(await stores[0]!.lookup('travel', 'task', 'contested'), winners[0]);
  });

  it('works on after Redis has forgotten its scripts', async () => {
    const store = await open();
    await store.record('travel', EAST, { taskId: 't1', terminal: false }, LONG);
    await admin.script('FLUSH');
    assert.equal((await store.record('travel', OTHER_TEAM, { taskId: 't2', terminal: false }, LONG)).task, 'recorded');
    assert.equal(await store.tracked(), 2);
  });

  it('a closed store refuses further calls', async () => {
    const store = await open();
    await store.close();
    await assert.rejects(store.lookup('travel', 'task', 't1'), OwnershipStoreError);
  });
});

describe('redis ownership store when Redis is gone', () => {
  const bound = { timeout: 15_000 };

  it('a stopped Redis makes every call an OwnershipStoreError, not a hang', bound, async () => {
    const ownPort = await freePort();
    const own = await startRedis(ownPort);
    try {
      const store = new RedisOwnershipStore({ redis: await connected(connect(ownPort)), keyPrefix: 'gone:', commandTimeoutMs: 1000 });
      await store.record('travel', EAST, { taskId: 't1', terminal: false }, LONG);
      await stopRedis(own);
      const calls = [
        store.lookup('travel', 'task', 't1'),
        store.lookupMany('travel', 'task', ['t1', 't2']),
        store.record('travel', EAST, { taskId: 't2', terminal: false }, LONG),
        store.tracked(),
      ];
      const results = await Promise.allSettled(calls);
      for (const r of results) {
        assert.equal(r.status, 'rejected');
        assert.ok(r.reason instanceof OwnershipStoreError, String(r.reason));
        assert.equal(r.reason.code, 'store_unavailable');
      }
      assert.deepEqual(
        results.map((r) => (r.status === 'rejected' ? (r.reason as OwnershipStoreError).operation : 'ok')),
        ['lookup', 'lookupMany', 'record', 'tracked'],
      );
    } finally {
      await stopRedis(own);
    }
  });

  it('a connection that queues commands while Redis is unreachable still fails within the store’s timeout', bound, async () => {
    const nobody = await freePort();
    // ioredis's defaults: an offline queue, twenty retries per command.
    const redis = new Redis({ host: '127.0.0.1', port: nobody, retryStrategy: () => 200 });
    redis.on('error', () => undefined);
    connections.push(redis);
    const store = new RedisOwnershipStore({ redis, keyPrefix: 'nobody:', commandTimeoutMs: 300 });
    await assert.rejects(
      store.lookup('travel', 'task', 't1'),
      (err: unknown) => err instanceof OwnershipStoreError && err.operation === 'lookup',
    );
    await assert.rejects(store.record('travel', EAST, { taskId: 't1', terminal: false }, LONG), OwnershipStoreError);
  });
});
