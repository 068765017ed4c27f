import { MemoryGovernanceStore } from './memory-store.js';
import { RedisGovernanceStore, type RedisTls } from './redis-store.js';
import {
  applyStoreErrorPolicy,
  type OnStoreError,
  type PolicedStore,
  type StoreFailure,
  type UnbookedReason,
} from './store-error-policy.js';

/** The store settings server/ adapts from `governance:`; a change needs a restart. */
export type StoreSettings =
  | { readonly store: 'memory' }
  | {
      readonly store: 'redis';
      readonly redisUrl: string;
      readonly keyPrefix: string;
      readonly onStoreError: OnStoreError;
      readonly commandTimeoutMs?: number;
      /** AUTH's user and password, already resolved from their references (never logged). */
      readonly username?: string;
      readonly password?: string;
      /** For a rediss:// URL: PEM text, already read from its files. */
      readonly tls?: RedisTls;
    };

export interface StoreHooks {
  /** Every store failure (log it, count `switchyard_governance_store_errors_total`). */
  readonly onFailure: (f: StoreFailure) => void;
  /** A served request whose usage did not reach the books (count `switchyard_governance_unbooked_total`). */
  readonly onUnbooked?: (reason: UnbookedReason) => void;
  /** Redis connection events (log them). */
  readonly onConnectionEvent?: (event: 'ready' | 'error' | 'reconnecting', detail: string) => void;
}

/** Builds the one store of the process (once, at start; a reload never rebuilds it). */
export function createGovernanceStore(settings: StoreSettings, hooks: StoreHooks): PolicedStore {
  if (settings.store === 'memory')
    return applyStoreErrorPolicy(new MemoryGovernanceStore(), 'fail_closed', hooks.onFailure, hooks.onUnbooked);
  const inner = new RedisGovernanceStore({
    url: settings.redisUrl,
    keyPrefix: settings.keyPrefix,
    commandTimeoutMs: settings.commandTimeoutMs,
    username: settings.username,
    password: settings.password,
    tls: settings.tls,
    onConnectionEvent: hooks.onConnectionEvent,
  });
  return applyStoreErrorPolicy(inner, settings.onStoreError, hooks.onFailure, hooks.onUnbooked);
}
