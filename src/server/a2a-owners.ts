import { Redis } from 'ioredis';
import { MemoryOwnershipStore, type OwnershipStore, RedisOwnershipStore } from '../a2a/index.js';
import type { GatewayConfig } from '../config/index.js';
import { redisConnection } from '../redis/index.js';
import type { Logger } from '../telemetry/index.js';
import { storeSettings } from './governance-store.js';

/**
 * Who owns each A2A task and context: in this replica's memory, or, when the governance
 * store is Redis, in that Redis under its key prefix, so that a follow-up reaching any
 * replica goes to the agent that created the task. Its own connection: a task lookup must
 * not queue behind the governance store's reserves. Built once at start (a change of the
 * governance store takes a restart).
 */
export function buildOwnershipStore(config: GatewayConfig, logger: Logger, env: NodeJS.ProcessEnv): OwnershipStore {
  const g = storeSettings(config, env);
  if (g.store === 'memory') return new MemoryOwnershipStore({ maxEntries: config.a2a.tasks.max_entries });
  const { href, options: connection } = redisConnection({ url: g.redisUrl, username: g.username, password: g.password, tls: g.tls });
  const redis = new Redis(href, {
    ...connection,
    // A follow-up waiting on a Redis that is down would only fail later: it fails at once.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 1000,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1000),
    reconnectOnError: () => false,
  });
  redis.on('error', (err: Error) => logger.debug({ msg: 'a2a task owners: redis', error: err.message }));
  const store = new RedisOwnershipStore({ redis, keyPrefix: g.keyPrefix, commandTimeoutMs: 1000 });
  const close = store.close.bind(store);
  // The store leaves the connection to its owner: this one.
  store.close = async () => {
    await close();
    redis.disconnect();
  };
  return store;
}
