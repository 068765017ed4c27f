import { createHash, timingSafeEqual } from 'node:crypto';
import { inspect } from 'node:util';

/**
 * A resolved upstream credential. The value lives in a private field so that logging,
 * JSON-serialising or inspecting a generation can never print it: only the adapter that
 * builds the upstream request reads it, through `authorization()`.
 */
export class Credential {
  readonly #value: string;
  /** Where the value came from (`env:EAST_KEY`), safe to show in admin views. */
  readonly source: string;

  constructor(value: string, source: string) {
    this.#value = value;
    this.source = source;
  }

  authorization(): string {
    return `Bearer ${this.#value}`;
  }

  /** The bare key, for providers that take it in their own header (Anthropic `x-api-key`, Azure `api-key`). */
  apiKey(): string {
    return this.#value;
  }

  /** Constant-time comparison, for bearer tokens presented to the admin API. */
  matches(presented: string): boolean {
    const a = createHash('sha256').update(presented).digest();
    const b = createHash('sha256').update(this.#value).digest();
    return timingSafeEqual(a, b);
  }

  toJSON(): string {
    return `[credential ${this.source}]`;
  }

  [inspect.custom](): string {
    return this.toJSON();
  }
}
