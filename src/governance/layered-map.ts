/**
 * A read-only map over two: `top` first, then `base`, whose keys the caller guarantees
 * apart (a policy refuses a duplicate id or digest before it builds one). A keyring's policy
 * is the config file's, compiled once, plus the database's few teams and keys: layering
 * them costs what the few cost, where copying the file's maps would cost what ten thousand
 * file keys do, on every key write.
 */
export class LayeredMap<K, V> implements ReadonlyMap<K, V> {
  readonly #top: ReadonlyMap<K, V>;
  readonly #base: ReadonlyMap<K, V>;

  constructor(top: ReadonlyMap<K, V>, base: ReadonlyMap<K, V>) {
    this.#top = top;
    this.#base = base;
  }

  get(key: K): V | undefined {
    const value = this.#top.get(key);
    return value !== undefined ? value : this.#base.get(key);
  }

  has(key: K): boolean {
    return this.#top.has(key) || this.#base.has(key);
  }

  get size(): number {
    return this.#top.size + this.#base.size;
  }

  *entries(): MapIterator<[K, V]> {
    yield* this.#base.entries();
    yield* this.#top.entries();
  }

  *keys(): MapIterator<K> {
    yield* this.#base.keys();
    yield* this.#top.keys();
  }

  *values(): MapIterator<V> {
    yield* this.#base.values();
    yield* this.#top.values();
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }
}
