import { Redis } from 'ioredis';
import type { GatewayConfig } from '../config/index.js';
import { DatabaseReplicaRecords, RedisReplicaRecords, type ReplicaRecords } from '../database/index.js';
import { redisConnection } from '../redis/index.js';
import type { Logger } from '../telemetry/index.js';
import type { DatabaseLink } from './database-link.js';
import { storeSettings } from './governance-store.js';

/**
 * Where the replicas' heartbeats meet: the database when there is one (replicas sharing it
 * share its `replicas` table), else the governance store's Redis (under its key prefix), else
 * nowhere (this replica alone). Redis gets a connection of its own, as the A2A task owners
 * do: a heartbeat must not queue behind the governance store's reserves, nor they behind it.
 */
export function buildReplicaRecords(
  config: GatewayConfig,
  database: DatabaseLink,
  logger: Logger,
  env: NodeJS.ProcessEnv,
  expireMs: number,
): { readonly records: ReplicaRecords | null; readonly close: (() => Promise<void>) | null } {
  if (database.database !== null) return { records: new DatabaseReplicaRecords(database.database), close: null };
  const g = storeSettings(config, env);
  if (g.store === 'memory') return { records: null, close: null };
  const { href, options: connection } = redisConnection({ url: g.redisUrl, username: g.username, password: g.password, tls: g.tls });
  const redis = new Redis(href, {
    ...connection,
    // The first beat waits for the connection (bounded by commandTimeout); a beat that fails
    // is tried again at the next one, never retried here.
    maxRetriesPerRequest: 0,
    commandTimeout: 1000,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1000),
    reconnectOnError: () => false,
  });
  // The heartbeat logs its failures once per streak; the connection's own events are detail.
  redis.on('error', (err: Error) => logger.debug({ msg: 'replica heartbeat: redis', error: err.message }));
  return {
    records: new RedisReplicaRecords({ redis, keyPrefix: g.keyPrefix, expireMs }),
    close: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
