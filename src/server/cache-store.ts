import { type CacheStore, createCacheStore } from '../cache/index.js';
import type { GatewayConfig } from '../config/index.js';
import type { Logger } from '../telemetry/index.js';
import { storeSettings } from './governance-store.js';

/**
 * The one response-cache store of the process, built at start from the first config (a
 * reload keeps it; a change of `cache.store` takes a restart). A redis store uses
 * `cache.redis_url` and its credentials when given, else the governance store's Redis (its
 * URL, key prefix, credentials and TLS), over a connection of its own: a slow cache must not
 * queue behind the governance store's reserves. Throws GovernanceStoreSettingsError when a
 * secret or TLS file cannot be read.
 */
export function buildCacheStore(config: GatewayConfig, logger: Logger, env: NodeJS.ProcessEnv): CacheStore {
  const c = config.cache;
  if (c.store === 'memory') return createCacheStore({ store: 'memory', maxBytes: c.max_bytes });
  // The cache's own Redis, when it names one, is resolved exactly as the governance store's would be.
  const own =
    c.redis_url === undefined
      ? config
      : {
          ...config,
          governance: {
            ...config.governance,
            store: 'redis' as const,
            redis_url: c.redis_url,
            redis_username: c.redis_username,
            redis_password: c.redis_password,
            redis_tls: c.redis_tls,
          },
        };
  const g = storeSettings(own, env);
  // The config's cross-check requires a Redis for a redis cache.
  if (g.store !== 'redis') throw new Error('cache.store is "redis" but neither cache.redis_url nor a redis governance store is set');
  return createCacheStore(
    {
      store: 'redis',
      redisUrl: g.redisUrl,
      keyPrefix: g.keyPrefix,
      username: g.username,
      password: g.password,
      tls: g.tls,
      // A lookup is bounded by lookup_timeout_ms on the request path; a write may take longer before it is given up.
      commandTimeoutMs: Math.max(1000, c.lookup_timeout_ms),
    },
    {
      onConnectionEvent: (event, detail) => {
        if (event === 'ready') logger.info({ msg: 'response cache connected', detail });
        else logger.warn({ msg: `response cache ${event}`, detail });
      },
    },
  );
}
