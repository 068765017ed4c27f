import { MemoryCacheStore } from './memory-store.js';
import { type CacheRedisTls, RedisCacheStore } from './redis-store.js';
import type { CacheStore } from './store.js';

/** `cache` as the factory takes it, server/ having resolved the secrets and read the files. */
export type CacheStoreSettings =
  | { readonly store: 'memory'; readonly maxBytes: number }
  | {
      readonly store: 'redis';
      /** cache.redis_url, else the governance store's; likewise the credentials. */
      readonly redisUrl: string;
      readonly keyPrefix: string;
      readonly username?: string;
      readonly password?: string;
      readonly tls?: CacheRedisTls;
      readonly commandTimeoutMs?: number;
    };

export interface CacheStoreDeps {
  /** Redis connection events, for the log. */
  readonly onConnectionEvent?: (event: 'ready' | 'error' | 'reconnecting', detail: string) => void;
  /** Milliseconds now, for the memory store's expiry (tests). */
  readonly now?: () => number;
}

/** The cache store of the process, built at start. */
export function createCacheStore(settings: CacheStoreSettings, deps: CacheStoreDeps = {}): CacheStore {
  switch (settings.store) {
    case 'memory':
      return new MemoryCacheStore({ maxBytes: settings.maxBytes, now: deps.now });
    case 'redis':
      return new RedisCacheStore({
        url: settings.redisUrl,
        keyPrefix: settings.keyPrefix,
        username: settings.username,
        password: settings.password,
        tls: settings.tls,
        commandTimeoutMs: settings.commandTimeoutMs,
        onConnectionEvent: deps.onConnectionEvent,
      });
  }
}
