import type { GatewayConfig } from '../config/index.js';
import { createGovernanceStore, type PolicedStore, type StoreSettings } from '../governance/index.js';
import type { Logger, Metrics } from '../telemetry/index.js';

/** `governance:` as the store factory takes it; the store is built once (a change takes a restart). */
function storeSettings(config: GatewayConfig): StoreSettings {
  const g = config.governance;
  if (g.store === 'memory' || g.redis_url === undefined) return { store: 'memory' };
  return { store: 'redis', redisUrl: g.redis_url, keyPrefix: g.key_prefix, onStoreError: g.on_store_error };
}

/** The one governance store of the process, with its failures logged and counted. */
export function buildGovernanceStore(config: GatewayConfig, logger: Logger, metrics: Metrics): PolicedStore {
  return createGovernanceStore(storeSettings(config), {
    onFailure: (f) => {
      metrics.governanceStoreErrors.inc({ operation: f.operation });
      logger.warn({ msg: 'governance store error', operation: f.operation, policy: f.policy, error: f.message });
    },
    onUnbooked: (reason) => metrics.governanceUnbooked.inc({ reason }),
    onConnectionEvent: (event, detail) => {
      if (event === 'ready') logger.info({ msg: 'governance store connected', detail });
      else logger.warn({ msg: `governance store ${event}`, detail });
    },
  });
}
