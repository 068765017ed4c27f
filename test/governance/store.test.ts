import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { type GovernanceStore, MemoryGovernanceStore, RedisGovernanceStore } from '../../src/governance/index.js';
import { storeSuite } from './store-suite.js';

// Both stores, one suite (STYLE.md 7). The redis store runs against the shared Redis on
// 127.0.0.1:6379, each store under its own key prefix, removed afterwards.

const REDIS_URL = 'redis://127.0.0.1:6379';
const RUN_PREFIX = `switchyard-test:${process.pid}:${randomUUID()}:`;

storeSuite('memory', {
  fresh: async (options) => new MemoryGovernanceStore(options),
  peer: async () => null,
  cleanup: async () => undefined,
});

const opened: RedisGovernanceStore[] = [];
const prefixOf = new Map<GovernanceStore, string>();

async function openRedis(keyPrefix: string, reservationTtlMs?: number): Promise<RedisGovernanceStore> {
  const store = new RedisGovernanceStore({ url: REDIS_URL, keyPrefix, reservationTtlMs });
  opened.push(store);
  prefixOf.set(store, keyPrefix);
  if (!(await store.ready(5000))) throw new Error(`Redis at ${REDIS_URL} is not reachable`);
  return store;
}

storeSuite('redis', {
  fresh: (options) => openRedis(`${RUN_PREFIX}${randomUUID()}:`, options?.reservationTtlMs),
  peer: (store) => openRedis(prefixOf.get(store) as string),
  cleanup: async () => {
    await Promise.all(opened.map((s) => s.close()));
    const admin = new Redis(REDIS_URL);
    try {
      let cursor = '0';
      for (let round = 0; round < 10_000; round += 1) {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${RUN_PREFIX}*`, 'COUNT', 500);
        if (keys.length > 0) await admin.del(...keys);
        cursor = next;
        if (cursor === '0') break;
      }
    } finally {
      admin.disconnect();
    }
  },
});
