/**
 * Round-robin positions, one per counter key. Stateful, built once and kept across reloads
 * (a generation is immutable, so its rotation cannot live in it). retain() drops the keys
 * that the serving generation no longer uses, so the map stays bounded.
 */
export class RoundRobinCounters {
  readonly #positions = new Map<string, number>();

  /** Returns the current position for `key` and advances it. */
  next(key: string): number {
    const position = this.#positions.get(key) ?? 0;
    // Wrap well before 2^53 so the modulo stays exact after years of traffic.
    this.#positions.set(key, position >= 0x3fffffff ? 0 : position + 1);
    return position;
  }

  /** Keeps the positions of `keys` only: O(positions), whatever the size of the generation. */
  retain(keys: ReadonlySet<string>): void {
    for (const key of this.#positions.keys()) if (!keys.has(key)) this.#positions.delete(key);
  }

  get size(): number {
    return this.#positions.size;
  }
}
