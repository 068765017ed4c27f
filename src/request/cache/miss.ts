import { AnswerCapture, type CacheEntry, entryBytes } from '../../cache/index.js';
import type { AnswerTransform } from '../../providers/index.js';
import type { RoutedRequest } from '../stage.js';
import { noteCacheError } from './note-error.js';
import type { CacheSettings } from './settings.js';
import type { AnswerCacheSlot } from './slot.js';

// A request the cache did not answer, on its way to the chain: the headers its answer
// carries (`x-switchyard-cache`, `x-switchyard-cache-key`), and a capture of what its
// client gets, tee'd off the relay as the last transform of each attempt's stack (it hands
// on every byte unchanged and at once). When the request is over, the answer is stored if
// it may be reused: a success, whole, from the route's first candidate (or any, with
// store_fallbacks), that no guardrail acted on, that calls no tool (unless
// cache_tool_calls), within max_entry_bytes.

/** Neither looked up nor stored: `x-switchyard-cache: bypass`. */
export const BYPASS: AnswerCacheSlot = Object.freeze({
  headers: Object.freeze(['x-switchyard-cache', 'bypass']),
  attempt: () => null,
});

/** A semantic miss: the vector of its last user turn, recorded with the entry. */
export interface SemanticMiss {
  readonly context: string;
  readonly vector: Float32Array;
  readonly maxEntries: number;
}

export class MissSlot implements AnswerCacheSlot {
  readonly headers: readonly string[];
  readonly #r: RoutedRequest;
  readonly #s: CacheSettings;
  readonly #key: string;
  readonly #ttlS: number;
  readonly #semantic: SemanticMiss | null;
  /** The capture of the latest attempt: the one that committed, when one did. */
  #capture: AnswerCapture | null = null;

  constructor(
    r: RoutedRequest,
    s: CacheSettings,
    key: string,
    result: 'miss' | 'refresh',
    clientTtlS: number | null,
    semantic: SemanticMiss | null,
  ) {
    this.#r = r;
    this.#s = s;
    this.#key = key;
    // The client may ask for a shorter life than the route's, never a longer one.
    this.#ttlS = clientTtlS === null ? s.ttlS : Math.min(clientTtlS, s.ttlS);
    this.#semantic = semantic;
    this.headers = ['x-switchyard-cache', result, 'x-switchyard-cache-key', key];
  }

  attempt(): AnswerTransform {
    const request = this.#r.request;
    const capture = new AnswerCapture({
      operation: request.operation as CacheEntry['operation'],
      protocol: request.operation === 'responses' ? 'responses' : request.protocol,
      maxBytes: this.#s.maxEntryBytes,
    });
    this.#capture = capture;
    return {
      body(status, body) {
        capture.body(status, typeof body === 'string' ? body : body.toString('utf8'));
        return body;
      },
      events(events) {
        capture.events(typeof events === 'string' ? events : events.toString('utf8'));
        return events;
      },
    };
  }

  /** The request is over and its answer was written: stored when it may be reused. */
  settle(): void {
    const entry = this.#entry();
    if (entry === null) return;
    const { x, svc } = this.#r;
    x.cacheStored();
    const store = svc.cache;
    store
      .put(entry)
      .then(
        () => {
          const semantic = this.#semantic;
          if (semantic === null) return;
          return store.addVector(semantic.context, entry.key, semantic.vector, entry.ttlS, semantic.maxEntries);
        },
        (err: unknown) => noteCacheError(svc, 'store', err),
      )
      .catch((err: unknown) => noteCacheError(svc, 'store', err));
  }

  #entry(): CacheEntry | null {
    const { x, request } = this.#r;
    const capture = this.#capture;
    const c = x.candidate;
    if (capture === null || c === null || x.outcome !== 'complete' || x.res.statusCode >= 300) return null;
    // A fallback's answer never stands for the route's first choice, unless the route says it may.
    // A candidate passed over for residency failed nothing: what served is the caller's first choice.
    if (x.failures.length > 0 && !this.#s.storeFallbacks && x.failures.some((f) => f.reason !== 'residency')) return null;
    // An answer a guardrail acted on (or could not check) is this request's alone.
    for (const v of x.guardrails) if (v.action !== 'allow' || v.error !== undefined) return null;
    const got = capture.result();
    if (!got.complete || got.oversize) return null;
    if (got.toolCalls && !this.#s.cacheToolCalls) return null;
    const entry: CacheEntry = {
      v: 1,
      key: this.#key,
      operation: request.operation as CacheEntry['operation'],
      protocol: request.operation === 'responses' ? 'responses' : request.protocol,
      route: request.model,
      team: request.principal.team ?? 'none',
      createdAtMs: Date.now(),
      ttlS: this.#ttlS,
      form: got.form,
      ...(got.form === 'whole' ? { body: got.body } : { events: got.events }),
      origin: { provider: c.provider.name, model: c.upstreamModel, candidate: c.stableId },
      usage: x.usage,
      costMicroUsd: x.costMicroUsd,
    };
    return entryBytes(entry) > this.#s.maxEntryBytes ? null : entry;
  }
}
