import type { CacheEntry, NearestMatch } from './entry.js';

// Where entries live: one replica's memory (bounded by max_bytes, least recently used out
// first) or Redis, shared by the fleet. Both answer the same operations; the request path
// bounds every lookup in time itself (lookup_timeout_ms), so a slow store makes a miss.
// A store's failure is an error the caller counts and treats as a miss, never the client's.

/** Which entries `drop` removes: those of a route, of a team, of both, or all (no filter). */
export interface DropFilter {
  readonly route?: string;
  readonly team?: string;
}

export interface CacheStore {
  readonly kind: 'memory' | 'redis';
  /** The entry stored under `key` while it lives, else null. The memory store answers at once. */
  get(key: string): CacheEntry | null | Promise<CacheEntry | null>;
  /** Stores (or replaces) an entry for entry.ttlS seconds. */
  put(entry: CacheEntry): Promise<void>;
  /**
   * Records `vector` as the last-user-turn vector of the entry `key` within `context` (a
   * digest of the scope and everything but that turn), for entry.ttlS; at most
   * `maxEntries` vectors per context, the oldest dropped first.
   */
  addVector(context: string, key: string, vector: Float32Array, ttlS: number, maxEntries: number): Promise<void>;
  /** The live entry of `context` whose vector is nearest to `vector` by cosine similarity, or null when the context has none. */
  nearest(context: string, vector: Float32Array): NearestMatch | null | Promise<NearestMatch | null>;
  /** Removes the entries the filter names (and their vectors); answers how many entries it removed. */
  drop(filter: DropFilter): Promise<number>;
  /** The bytes the entries take now (for `switchyard_cache_bytes`; Redis: the sum this store's own index knows, or an estimate). */
  bytes(): number | Promise<number>;
  close(): Promise<void>;
}

/** A store's failure (Redis down, a command timed out, a record it cannot read): counted, answered as a miss. */
export class CacheStoreError extends Error {
  override readonly name = 'CacheStoreError';
}
