import { ProviderPool, type PoolSpec } from './provider-pool.js';

/**
 * The stateful owner of upstream pools, built once by server/. `acquire` is what
 * buildGeneration uses as its pool factory: an identity that is already known keeps its
 * pool (and warm connections) across reloads, unless its connection settings changed.
 */
export class PoolRegistry {
  readonly #pools = new Map<string, ProviderPool>();

  acquire(spec: PoolSpec): ProviderPool {
    let pool = this.#pools.get(spec.identity);
    // New connection settings need a new pool; the old one drains its in-flight calls.
    if (pool !== undefined && !pool.retired && !pool.fits(spec)) pool.retire();
    if (pool === undefined || pool.retired) {
      pool = new ProviderPool(spec);
      this.#pools.set(spec.identity, pool);
    }
    return pool;
  }

  /** After a swap: retire every pool whose identity the serving generation no longer has. */
  retain(identities: Iterable<string>): string[] {
    const keep = new Set(identities);
    const retired: string[] = [];
    for (const [identity, pool] of this.#pools) {
      if (keep.has(identity)) continue;
      pool.retire();
      this.#pools.delete(identity);
      retired.push(identity);
    }
    return retired;
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
