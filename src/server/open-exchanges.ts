import { ControlSlot } from '../request/index.js';

/**
 * One request in progress as the open list holds it: its control slot (what the drain
 * stops), with the list's links kept here, private to the list, rather than on the
 * request. The listener builds one per request in place of a bare control slot, so
 * membership costs no object of its own.
 */
class OpenRequest extends ControlSlot {
  prev: OpenRequest | null = null;
  next: OpenRequest | null = null;
}

/**
 * The requests in progress, for the drain: a list threaded through their control slots. A
 * Set would do the same with less code, but a long-lived Set is an old-space table that
 * every request writes a young object into; measured under load, the scavenger's time per
 * collection grew fourfold within 15 s (old-to-new references, and dead requests promoted
 * through them), about a tenth of the gateway's CPU. A removed entry keeps no link to its
 * neighbours, so a dead one holds nothing young alive.
 */
export class OpenExchanges {
  #head: OpenRequest | null = null;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** A new request's control slot, in the list until `delete`. */
  add(): ControlSlot {
    const x = new OpenRequest();
    const head = this.#head;
    x.next = head;
    if (head !== null) head.prev = x;
    this.#head = x;
    this.#size += 1;
    return x;
  }

  /** Removes `slot` if it is in the list (a second delete is a no-op). */
  delete(slot: ControlSlot): void {
    if (!(slot instanceof OpenRequest)) return;
    const x = slot;
    const { prev, next } = x;
    if (prev === null && this.#head !== x) return;
    if (prev === null) this.#head = next;
    else prev.next = next;
    if (next !== null) next.prev = prev;
    x.prev = null;
    x.next = null;
    this.#size -= 1;
  }

  /** The control slots of the requests in progress. */
  *[Symbol.iterator](): Generator<ControlSlot> {
    for (let x = this.#head; x !== null; ) {
      // Read the next one first: the caller may end (and so remove) the one it is given.
      const next: OpenRequest | null = x.next;
      yield x;
      x = next;
    }
  }
}
