import type { Database } from '../database/index.js';
import { DatabaseResponseStore } from './database-store.js';
import { MemoryResponseStore } from './memory-store.js';
import { RedisResponseStore, type ResponseRedisTls } from './redis-store.js';
import type { ResponseStore } from './store.js';

/** `routing.responses` as the factory takes it, server/ having resolved the secrets and read the files. */
export type ResponseStoreSettings =
  | { readonly store: 'memory'; readonly ttlS: number; readonly maxEntries: number }
  | {
      readonly store: 'redis';
      readonly ttlS: number;
      /** The governance store's Redis: its URL, key prefix and credentials. */
      readonly redisUrl: string;
      readonly keyPrefix: string;
      readonly username?: string;
      readonly password?: string;
      readonly tls?: ResponseRedisTls;
      readonly commandTimeoutMs?: number;
    }
  | { readonly store: 'database'; readonly retentionDays: number };

export interface ResponseStoreDeps {
  /** The gateway's open (and migrated) database: required for `store: database`. */
  readonly database?: Database | null;
  /** Redis connection events, for the log. */
  readonly onConnectionEvent?: (event: 'ready' | 'error' | 'reconnecting', detail: string) => void;
  /** Milliseconds now, for the memory store's expiry (tests). */
  readonly now?: () => number;
}

/** The one response store of the process, built at start; a reload never rebuilds it. */
export function createResponseStore(settings: ResponseStoreSettings, deps: ResponseStoreDeps = {}): ResponseStore {
  switch (settings.store) {
    case 'memory':
      return new MemoryResponseStore({ ttlMs: settings.ttlS * 1000, maxEntries: settings.maxEntries, now: deps.now });
    case 'redis':
      return new RedisResponseStore({
        url: settings.redisUrl,
        keyPrefix: settings.keyPrefix,
        ttlS: settings.ttlS,
        username: settings.username,
        password: settings.password,
        tls: settings.tls,
        commandTimeoutMs: settings.commandTimeoutMs,
        onConnectionEvent: deps.onConnectionEvent,
      });
    case 'database': {
      // The config's cross-check requires database.url with this store: a missing one is a wiring fault.
      if (deps.database === undefined || deps.database === null)
        throw new Error('routing.responses.store is "database" but no database is open');
      return new DatabaseResponseStore(deps.database, { retentionDays: settings.retentionDays });
    }
  }
}
