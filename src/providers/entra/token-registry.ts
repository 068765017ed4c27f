import { createHash } from 'node:crypto';
import type { EntraSpec } from './token-client.js';
import { EntraTokenSource, type TokenEvent } from './token-source.js';

/**
 * The stateful owner of Entra ID token sources, built once by server/ (as PoolRegistry owns
 * pools). A provider whose auth is unchanged across a reload keeps its source and the token
 * in hand, so a reload never leaves a request without one; `retain` after a swap stops the
 * rest.
 */
export class TokenSourceRegistry {
  readonly #sources = new Map<string, EntraTokenSource>();
  readonly #onEvent: (e: TokenEvent) => void;

  constructor(onEvent: (e: TokenEvent) => void = () => {}) {
    this.#onEvent = onEvent;
  }

  /** The source for this spec, started (its first fetch under way) if new. */
  acquire(spec: EntraSpec): EntraTokenSource {
    const key = sourceKey(spec);
    let source = this.#sources.get(key);
    if (source === undefined) {
      source = new EntraTokenSource(spec, this.#onEvent);
      this.#sources.set(key, source);
      void source.start();
    }
    return source;
  }

  /** Settles when every source's first fetch has (a start waits for tokens before it listens). */
  async settled(): Promise<void> {
    await Promise.all([...this.#sources.values()].map((s) => s.start()));
  }

  retain(inUse: Iterable<EntraTokenSource>): void {
    const keep = new Set(inUse);
    for (const [key, source] of this.#sources) {
      if (keep.has(source)) continue;
      source.stop();
      this.#sources.delete(key);
    }
  }

  stopAll(): void {
    this.retain([]);
  }

  get size(): number {
    return this.#sources.size;
  }
}

function sourceKey(spec: EntraSpec): string {
  // The secret enters the key as a digest: a rotated secret makes a new source, and no secret is kept in the map.
  const secret = spec.clientSecret === null ? null : createHash('sha256').update(spec.clientSecret.apiKey()).digest('hex');
  return JSON.stringify([spec.providerName, spec.authorityHost, spec.tenantId, spec.clientId, secret, spec.assertionFile]);
}
