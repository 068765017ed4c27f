import { type ConfigIssue, formatIssue, type GatewayConfig, resolveSecret } from '../config/index.js';
import { readBoundedFileSync } from '../contract/index.js';
import { createGovernanceStore, type PolicedStore, type StoreSettings } from '../governance/index.js';
import type { Logger, Metrics } from '../telemetry/index.js';

/** A CA bundle or a certificate chain is a few kilobytes; a file past this is a mistake (as for a provider's tls). */
const MAX_PEM_BYTES = 1024 * 1024;

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
function storeSettings(config: GatewayConfig, env: NodeJS.ProcessEnv): StoreSettings {
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
  let tls: { ca?: string; cert?: string; key?: string; serverName?: string } | undefined;
  if (g.redis_tls !== undefined) {
    tls = {};
    for (const part of ['ca', 'cert', 'key'] as const) {
      const ref = g.redis_tls[part];
      if (ref === undefined) continue;
      const read = readBoundedFileSync(ref.file, MAX_PEM_BYTES, `governance.redis_tls.${part} file`);
      if (!read.ok) issues.push({ path: `governance.redis_tls.${part}`, message: read.message });
      else tls[part] = read.bytes.toString('utf8');
    }
    if (g.redis_tls.server_name !== undefined) tls.serverName = g.redis_tls.server_name;
  }
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
