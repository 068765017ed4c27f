import { type CacheEntry, entryBytes, type NearestMatch } from './entry.js';
import type { CacheStore, DropFilter } from './store.js';
import { cosineWithNorms, vectorNorm } from './vector.js';

export interface MemoryCacheStoreOptions {
  /** The most bytes (entryBytes) the entries may take: past it the least recently used go first. */
  readonly maxBytes: number;
  /** Milliseconds now; tests pass a clock they move. */
  readonly now?: () => number;
}

interface Held {
  readonly entry: CacheEntry;
  readonly bytes: number;
  readonly expiresAtMs: number;
}

interface StoredVector {
  readonly vector: Float32Array;
  readonly norm: number;
  readonly expiresAtMs: number;
}

/** How often, at most, a write past the bound looks through every entry for expired ones. */
const SWEEP_INTERVAL_MS = 1000;

/**
 * One replica's cache. Entries sit in a Map in order of use (a hit moves its entry to the
 * end), so the least recently used is the first key. Expiry is read on access and nothing
 * runs on a timer. Each context's vectors sit in a Map in order of writing, so the oldest
 * is the first key; a vector goes with its entry (an index from key to contexts), so the
 * vectors never outnumber the entries and contexts never outlive them.
 * `get` and `nearest` answer synchronously: the hit path pays no promise for them.
 */
export class MemoryCacheStore implements CacheStore {
  readonly kind = 'memory' as const;
  readonly #maxBytes: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Held>();
  #bytes = 0;
  #nextSweepAtMs = 0;
  readonly #vectors = new Map<string, Map<string, StoredVector>>();
  /** Key -> the contexts holding a vector of it (almost always one). */
  readonly #contextsOf = new Map<string, Set<string>>();

  constructor(options: MemoryCacheStoreOptions) {
    this.#maxBytes = options.maxBytes;
    this.#now = options.now ?? Date.now;
  }

  get(key: string): CacheEntry | null {
    const held = this.#live(key);
    if (held === undefined) return null;
    this.#entries.delete(key);
    this.#entries.set(key, held);
    return held.entry;
  }

  async put(entry: CacheEntry): Promise<void> {
    const bytes = entryBytes(entry);
    const expiresAtMs = entry.createdAtMs + entry.ttlS * 1000;
    if (bytes > this.#maxBytes || expiresAtMs <= this.#now()) return;
    // The entry it replaces answered the same key: its vectors stay, they are this key's.
    const old = this.#entries.get(entry.key);
    if (old !== undefined) {
      this.#entries.delete(entry.key);
      this.#bytes -= old.bytes;
    }
    this.#entries.set(entry.key, { entry, bytes, expiresAtMs });
    this.#bytes += bytes;
    if (this.#bytes > this.#maxBytes) this.#evict();
  }

  async addVector(context: string, key: string, vector: Float32Array, ttlS: number, maxEntries: number): Promise<void> {
    let vectors = this.#vectors.get(context);
    if (vectors === undefined) this.#vectors.set(context, (vectors = new Map()));
    vectors.delete(key);
    vectors.set(key, { vector, norm: vectorNorm(vector), expiresAtMs: this.#now() + ttlS * 1000 });
    let contexts = this.#contextsOf.get(key);
    if (contexts === undefined) this.#contextsOf.set(key, (contexts = new Set()));
    contexts.add(context);
    while (vectors.size > maxEntries) this.#dropVector(context, vectors.keys().next().value as string);
  }

  nearest(context: string, vector: Float32Array): NearestMatch | null {
    const vectors = this.#vectors.get(context);
    if (vectors === undefined) return null;
    const now = this.#now();
    const norm = vectorNorm(vector);
    let best: NearestMatch | null = null;
    for (const [key, stored] of vectors) {
      if (stored.expiresAtMs <= now || this.#live(key) === undefined) {
        // Deleting the current key while iterating a Map is safe: iteration goes on with the next.
        this.#dropVector(context, key);
        continue;
      }
      const similarity = cosineWithNorms(vector, norm, stored.vector, stored.norm);
      if (best === null || similarity > best.similarity) best = { key, similarity };
    }
    return best;
  }

  async drop(filter: DropFilter): Promise<number> {
    const now = this.#now();
    let dropped = 0;
    for (const [key, held] of this.#entries) {
      if (filter.route !== undefined && held.entry.route !== filter.route) continue;
      if (filter.team !== undefined && held.entry.team !== filter.team) continue;
      // An expired entry goes too, but it was no longer there to count.
      if (held.expiresAtMs > now) dropped += 1;
      this.#remove(key);
    }
    return dropped;
  }

  bytes(): number {
    return this.#bytes;
  }

  async close(): Promise<void> {
    this.#entries.clear();
    this.#vectors.clear();
    this.#contextsOf.clear();
    this.#bytes = 0;
  }

  /** The entry under `key` while it lives (its recency untouched); an expired one is removed. */
  #live(key: string): Held | undefined {
    const held = this.#entries.get(key);
    if (held === undefined || held.expiresAtMs > this.#now()) return held;
    this.#remove(key);
    return undefined;
  }

  /** Back under the bound: the expired first (at most once a SWEEP_INTERVAL_MS), then the least recently used. */
  #evict(): void {
    const now = this.#now();
    if (now >= this.#nextSweepAtMs) {
      this.#nextSweepAtMs = now + SWEEP_INTERVAL_MS;
      for (const [key, held] of this.#entries) if (held.expiresAtMs <= now) this.#remove(key);
    }
    while (this.#bytes > this.#maxBytes && this.#entries.size > 0) this.#remove(this.#entries.keys().next().value as string);
  }

  /** Removes the entry and every vector of it. */
  #remove(key: string): void {
    const held = this.#entries.get(key);
    if (held !== undefined) {
      this.#entries.delete(key);
      this.#bytes -= held.bytes;
    }
    const contexts = this.#contextsOf.get(key);
    if (contexts !== undefined) for (const context of [...contexts]) this.#dropVector(context, key);
  }

  #dropVector(context: string, key: string): void {
    const vectors = this.#vectors.get(context);
    vectors?.delete(key);
    if (vectors?.size === 0) this.#vectors.delete(context);
    const contexts = this.#contextsOf.get(key);
    contexts?.delete(context);
    if (contexts?.size === 0) this.#contextsOf.delete(key);
  }
}
