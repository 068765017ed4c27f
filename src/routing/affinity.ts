/**
 * Bounded bindings with a TTL: key -> value, dropped when they expire or when the table is
 * full (oldest first). Two tables use it, both stateful, built once by server/ and never
 * rebuilt by a reload: session affinity (session key -> candidate stable_id) and response
 * ownership (a Responses API response id -> the candidate that created it).
 */
export interface AffinityOptions {
  readonly ttlMs: number;
  readonly maxEntries: number;
}

interface Binding<V> {
  value: V;
  expiresAtMs: number;
}

export class BindingTable<V> {
  #options: AffinityOptions;
  readonly #now: () => number;
  // A Map iterates in insertion order; set() re-inserts, so the first entry is the oldest.
  readonly #bindings = new Map<string, Binding<V>>();

  constructor(options: AffinityOptions, now: () => number = Date.now) {
    this.#options = options;
    this.#now = now;
  }

  configure(options: AffinityOptions): void {
    // A shorter TTL also caps the bindings already made, at now + the new TTL. Besides being
    // what shortening it means, this keeps insertion order equal to expiry order, which
    // #evict and size rely on to find every expired binding at the front.
    if (options.ttlMs < this.#options.ttlMs) {
      const cap = this.#now() + options.ttlMs;
      for (const binding of this.#bindings.values()) if (binding.expiresAtMs > cap) binding.expiresAtMs = cap;
    }
    this.#options = options;
  }

  get(key: string): V | undefined {
    const binding = this.#bindings.get(key);
    if (binding === undefined) return undefined;
    if (binding.expiresAtMs <= this.#now()) {
      this.#bindings.delete(key);
      return undefined;
    }
    return binding.value;
  }

  bind(key: string, value: V): void {
    const now = this.#now();
    this.#bindings.delete(key);
    if (this.#bindings.size >= this.#options.maxEntries) this.#evict(now);
    this.#bindings.set(key, { value, expiresAtMs: now + this.#options.ttlMs });
  }

  /** Forgets a binding (what it named no longer exists); true when there was one. */
  delete(key: string): boolean {
    return this.#bindings.delete(key);
  }

  /** Live bindings. Expired ones are dropped first: they are all at the front, so this costs O(expired). */
  get size(): number {
    const now = this.#now();
    for (const [key, binding] of this.#bindings) {
      if (binding.expiresAtMs > now) break;
      this.#bindings.delete(key);
    }
    return this.#bindings.size;
  }

  /**
   * Expired entries go first, then the least recently bound. With one TTL for all, insertion
   * order is expiry order, so both are found at the front: eviction costs O(evicted).
   */
  #evict(now: number): void {
    for (const [key, binding] of this.#bindings) {
      if (binding.expiresAtMs > now && this.#bindings.size < this.#options.maxEntries) break;
      this.#bindings.delete(key);
    }
  }
}

/**
 * Session bindings: session key -> candidate stable_id. Keyed by stable_id rather than by
 * position or provider, so bindings survive reloads that reorder or re-point candidates.
 * Per replica, as in the original consumer.
 */
export class SessionAffinity extends BindingTable<string> {}
