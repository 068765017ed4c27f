import type { Generation } from './generation.js';

/**
 * The one reference to the serving generation. JavaScript runs a request's synchronous
 * code without interruption, so a plain field is an atomic pointer: a request that calls
 * current() once holds a whole generation, and swap() can only happen between requests'
 * synchronous steps, never inside one.
 */
export class GenerationHolder {
  #current: Generation | null = null;

  /** The serving generation. Throws before the first swap: nothing may route before then. */
  current(): Generation {
    const gen = this.#current;
    if (gen === null) throw new Error('no generation is serving yet');
    return gen;
  }

  get ready(): boolean {
    return this.#current !== null;
  }

  /** Publishes a validated generation; returns the one it replaced. */
  swap(next: Generation): Generation | null {
    const previous = this.#current;
    this.#current = next;
    return previous;
  }
}
