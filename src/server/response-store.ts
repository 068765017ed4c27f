import { type GatewayConfig, responsesDefaults } from '../config/index.js';
import type { Database } from '../database/index.js';
import { createResponseStore, type ResponseStore, type ResponseStoreSettings } from '../responses/index.js';
import type { Logger } from '../telemetry/index.js';
import { storeSettings } from './governance-store.js';

/**
 * `routing.responses` as the store factory takes it. A redis store shares the governance
 * store's Redis (its URL, key prefix, credentials and TLS, resolved by the same function),
 * over a connection of its own: a slow conversation read must not queue behind the
 * governance store's reserves. Throws GovernanceStoreSettingsError when a secret or TLS
 * file of `governance:` cannot be read.
 */
function responseStoreSettings(config: GatewayConfig, env: NodeJS.ProcessEnv): ResponseStoreSettings {
  const r = config.routing.responses ?? responsesDefaults;
  if (r.store === 'database') return { store: 'database', retentionDays: r.retention_days };
  if (r.store === 'memory') return { store: 'memory', ttlS: r.ttl_s, maxEntries: r.max_entries };
  const g = storeSettings(config, env);
  // The config's cross-check requires a redis governance store with this one.
  if (g.store !== 'redis') throw new Error('routing.responses.store is "redis" but governance.store is not');
  return {
    store: 'redis',
    ttlS: r.ttl_s,
    redisUrl: g.redisUrl,
    keyPrefix: g.keyPrefix,
    username: g.username,
    password: g.password,
    tls: g.tls,
  };
}

/** The one response store of the process, built at start from the first config; a reload keeps it. */
export function buildResponseStore(
  config: GatewayConfig,
  database: Database | null,
  logger: Logger,
  env: NodeJS.ProcessEnv,
): ResponseStore {
  return createResponseStore(responseStoreSettings(config, env), {
    database,
    onConnectionEvent: (event, detail) => {
      if (event === 'ready') logger.info({ msg: 'response store connected', detail });
      else logger.warn({ msg: `response store ${event}`, detail });
    },
  });
}

/** How often the database store drops what is past retention. */
export const RESPONSE_PRUNE_EVERY_MS = 3_600_000;

/**
 * Prunes the database store now and then every RESPONSE_PRUNE_EVERY_MS, off the request
 * path; a failed prune is logged and tried again next time. Null for the stores that
 * expire by TTL.
 */
export function pruneResponses(store: ResponseStore, logger: Logger): NodeJS.Timeout | null {
  const prune = store.prune?.bind(store);
  if (prune === undefined) return null;
  const run = async (): Promise<void> => {
    try {
      const dropped = await prune(Date.now());
      if (dropped > 0) logger.info({ msg: 'response store pruned', responses: dropped });
    } catch (err) {
      logger.warn({ msg: 'response store', problem: `prune failed: ${(err as Error).message}` });
    }
  };
  const timer = setInterval(() => void run(), RESPONSE_PRUNE_EVERY_MS);
  timer.unref();
  void run();
  return timer;
}
