import type { Exchange } from '../request/index.js';

/**
 * The requests in progress, for the drain: a list threaded through the Exchanges
 * themselves. A Set would do the same with less code, but a long-lived Set is an old-space
 * table that every request writes a young Exchange into; measured under load, the
 * scavenger's time per collection grew fourfold within 15 s (old-to-new references, and
 * dead Exchanges promoted through them), about a tenth of the gateway's CPU. A removed
 * Exchange keeps no link to its neighbours, so a dead one holds nothing young alive.
 */
export class OpenExchanges {
  #head: Exchange | null = null;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(x: Exchange): void {
    const head = this.#head;
    x.nextOpen = head;
    x.prevOpen = null;
    if (head !== null) head.prevOpen = x;
    this.#head = x;
    this.#size += 1;
  }

  /** Removes `x` if it is in the list (a second delete is a no-op). */
  delete(x: Exchange): void {
    const { prevOpen: prev, nextOpen: next } = x;
    if (prev === null && this.#head !== x) return;
    if (prev === null) this.#head = next;
    else prev.nextOpen = next;
    if (next !== null) next.prevOpen = prev;
    x.prevOpen = null;
    x.nextOpen = null;
    this.#size -= 1;
  }

  *[Symbol.iterator](): Generator<Exchange> {
    for (let x = this.#head; x !== null; ) {
      // Read the next one first: the caller may end (and so remove) the one it is given.
      const next: Exchange | null = x.nextOpen;
      yield x;
      x = next;
    }
  }
}
