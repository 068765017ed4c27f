import { createHash } from 'node:crypto';
import { type PoolSpec, ProviderPool } from './provider-pool.js';

/**
 * The stateful owner of upstream pools, built once by server/. `acquire` is what
 * buildGeneration uses as its pool factory. Pools are keyed by provider identity AND
 * connection settings: two providers on one endpoint with different settings each keep a
 * pool of their own (sharing one would retire it whenever the other asked), and a known
 * key keeps its pool (and warm connections) across reloads.
 */
export class PoolRegistry {
  readonly #pools = new Map<string, ProviderPool>();

  acquire(spec: PoolSpec): ProviderPool {
    const key = poolKey(spec);
    let pool = this.#pools.get(key);
    if (pool === undefined || pool.retired) {
      pool = new ProviderPool(spec);
      this.#pools.set(key, pool);
    }
    return pool;
  }

  /**
   * After a swap: retire every pool the serving generation does not use (a removed or
   * re-pointed provider, or old connection settings); each drains its in-flight calls.
   */
  retain(inUse: Iterable<ProviderPool>): void {
    const keep = new Set(inUse);
    for (const [key, pool] of this.#pools) {
      if (keep.has(pool)) continue;
      pool.retire();
      this.#pools.delete(key);
    }
  }

  get size(): number {
    return this.#pools.size;
  }

  async destroyAll(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.destroy()));
  }
}

function poolKey(spec: PoolSpec): string {
  // TLS material enters the key as a digest: new files (a rotated certificate) make a new
  // pool, and no key text is kept in the map.
  const tls = spec.tls === undefined ? null : createHash('sha256').update(JSON.stringify(spec.tls)).digest('hex');
  return JSON.stringify([spec.identity, spec.baseUrl, spec.maxConnections, spec.connectTimeoutMs, tls]);
}
