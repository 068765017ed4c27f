import { type ConfigIssue, formatIssue, type GatewayConfig, resolveSecret } from '../config/index.js';
import { createGovernanceStore, type PolicedStore, type StoreSettings } from '../governance/index.js';
import { readTlsFiles } from '../live/index.js';
import type { Logger, Metrics } from '../telemetry/index.js';

/** A start-up failure of the store's settings: every issue, each naming its key and never a secret's value. */
export class GovernanceStoreSettingsError extends Error {
  readonly issues: readonly ConfigIssue[];
  constructor(issues: readonly ConfigIssue[]) {
    super(`cannot build the governance store:\n  ${issues.map(formatIssue).join('\n  ')}`);
    this.name = 'GovernanceStoreSettingsError';
    this.issues = issues;
  }
}

/**
 * `governance:` as the store factory takes it, its secret references resolved and its TLS
 * files read here, once: the store is built once at start, so a change (or a rotated
 * password or certificate) takes a restart.
 */
export function storeSettings(config: GatewayConfig, env: NodeJS.ProcessEnv): StoreSettings {
  const g = config.governance;
  if (g.store === 'memory' || g.redis_url === undefined) return { store: 'memory' };
  const issues: ConfigIssue[] = [];
  const secret = (path: string, ref: typeof g.redis_password): string | undefined => {
    if (ref === undefined) return undefined;
    const resolved = resolveSecret(ref, env);
    if (resolved.ok) return resolved.value;
    issues.push({ path, message: resolved.message });
    return undefined;
  };
  const username = secret('governance.redis_username', g.redis_username);
  const password = secret('governance.redis_password', g.redis_password);
  const tls = g.redis_tls === undefined ? undefined : readTlsFiles('governance.redis_tls', g.redis_tls, issues);
  if (issues.length > 0) throw new GovernanceStoreSettingsError(issues);
  return { store: 'redis', redisUrl: g.redis_url, keyPrefix: g.key_prefix, onStoreError: g.on_store_error, username, password, tls };
}

/**
 * The one governance store of the process, with its failures logged and counted. Throws
 * GovernanceStoreSettingsError, before any connection is made, when a secret or a TLS file
 * of `governance:` cannot be read.
 */
export function buildGovernanceStore(
  config: GatewayConfig,
  logger: Logger,
  metrics: Metrics,
  env: NodeJS.ProcessEnv = process.env,
): PolicedStore {
  return createGovernanceStore(storeSettings(config, env), {
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
