import { createHash } from 'node:crypto';
import {
  type CachedOperation,
  type CachedProtocol,
  type CacheEntry,
  type CacheStore,
  KEY_HEADERS,
  type RequestKey,
  requestKey,
} from '../../cache/index.js';
import type { CompiledGuardrail } from '../../guardrails/index.js';
import type { Exchange, ModelRequest } from '../exchange.js';
import { isGuardrailQuestion } from '../guardrails/ask.js';
import { attachedFor } from '../guardrails/attached.js';
import type { Services } from '../services.js';
import type { RoutedRequest, Stage } from '../stage.js';
import { type CacheControls, controlsOf } from './controls.js';
import { EmbeddingFailed, embed, isCacheCall } from './embed.js';
import { serveHit } from './hit.js';
import { BYPASS, MissSlot, type SemanticMiss } from './miss.js';
import { noteCacheError } from './note-error.js';
import { outcome } from './outcome.js';
import { type CacheSettings, cacheFor } from './settings.js';

// The response cache, as a request stage: after the input guardrails (a request they would
// block is never answered from the cache), before the pre-check (a hit reserves nothing).
// A route without a cache passes through untouched. Otherwise the request is keyed
// (cache/key.ts), looked up within lookup_timeout_ms (a slow or failed store is a miss,
// never an error), and either answered from the entry (hit.ts) or sent on with a slot that
// captures its answer and stores it when it may be reused (miss.ts). Semantic mode looks the
// exact key up first, then embeds the last user turn through the embedding route and asks
// the store for the nearest entry of the same context.

export const cacheStage: Stage = (next) => (r, done) => {
  const { x, request } = r;
  if (request.stored !== null || request.operation === 'count_tokens') return next(r, done);
  if (isCacheCall(x)) {
    x.askedByCache();
    return next(r, done);
  }
  if (isGuardrailQuestion(x)) return next(r, done);
  const settings = cacheFor(request.gen, request.keyring, request.principal, request.model);
  if (settings === null) return next(r, done);
  const controls = controlsOf(x.req);
  const unusable = settings === 'off' ? 'off' : controls.noStore ? 'no-store' : notCacheable(x, request);
  if (unusable !== null) {
    x.cacheLooked(outcome('bypass', request.model, null));
    return next(withSlot(r, BYPASS), done);
  }
  const s = settings as CacheSettings;
  const keyed = requestKey(
    {
      operation: request.operation as CachedOperation,
      protocol: protocolOf(request),
      route: request.model,
      scope: scopeOf(s, request),
      namespace: controls.namespace,
      body: request.parsed,
      headers: keyHeaders(x),
      guardrails: guardrailsOf(request),
    },
    s.mode === 'semantic',
  );
  const look = new Lookup(r, s, controls, keyed, next, done);
  look.start();
};

/** Why a request on a cached route is neither looked up nor stored, or null when it may be. */
function notCacheable(x: Exchange, request: ModelRequest): string | null {
  if (request.operation === 'responses') {
    const p = request.parsed;
    // A stored response is never served from the cache: each has its own id, and the store its own copy.
    if (p.store !== false) return 'store';
    // The conversation lives in the gateway's store, not in the body: the key could not see it.
    if (p.previous_response_id != null || p.conversation != null || p.background === true) return 'state';
  }
  // The input guardrails changed the request (masked it) or flagged it: its answer belongs to this request alone.
  for (const v of x.guardrails) if (v.phase === 'input' && v.action !== 'allow') return 'guardrail';
  return null;
}

function protocolOf(request: ModelRequest): CachedProtocol {
  return request.operation === 'responses' ? 'responses' : request.protocol;
}

function scopeOf(s: CacheSettings, request: ModelRequest): string {
  const p = request.principal;
  if (s.scope === 'global') return 'global';
  if (s.scope === 'key') return `key:${p.keyId ?? 'none'}`;
  return `team:${p.team ?? 'none'}`;
}

function keyHeaders(x: Exchange): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of KEY_HEADERS) {
    const v = x.req.headers[name];
    if (typeof v === 'string') out[name] = v;
    else if (Array.isArray(v)) out[name] = v.join(',');
  }
  return out;
}

const fingerprints = new WeakMap<readonly CompiledGuardrail[], string>();

/** The guardrails the request runs, by name and settings: a changed guardrail makes new keys. */
function guardrailsOf(request: ModelRequest): string {
  if (request.gen.config.guardrails === undefined) return '';
  const attached = attachedFor(request.gen, request.keyring, request.principal, request.model);
  const all = [...attached.input, ...attached.output];
  if (all.length === 0) return '';
  let known = fingerprints.get(attached.input);
  if (known === undefined) {
    const defined = request.gen.config.guardrails;
    const parts = all.map((g) => `${g.name}=${JSON.stringify(defined[g.name] ?? null)}`);
    known = createHash('sha256').update(parts.join('\n')).digest('hex');
    fingerprints.set(attached.input, known);
  }
  return known;
}

function withSlot(r: RoutedRequest, slot: ModelRequest['cache']): RoutedRequest {
  return { ...r, request: { ...r.request, cache: slot } };
}

type Found = { readonly entry: CacheEntry; readonly similarity: number | null } | null;

/** One request's way through the cache: the lookup (exact, then semantic), then a hit or the miss. */
class Lookup {
  readonly #r: RoutedRequest;
  readonly #s: CacheSettings;
  readonly #controls: CacheControls;
  readonly #keyed: RequestKey;
  readonly #next: Parameters<Stage>[0];
  readonly #done: (err: unknown) => void;
  readonly #store: CacheStore;
  readonly #svc: Services;
  /** A store failure or a timeout during the lookup: the miss is counted as the cache's `error`. */
  #failed = false;
  /** The semantic part of the miss: the vector to record with the entry. */
  #semantic: SemanticMiss | null = null;
  /** The nearest entry's similarity, when a semantic lookup found one under the threshold. */
  #nearest: number | null = null;

  constructor(
    r: RoutedRequest,
    s: CacheSettings,
    controls: CacheControls,
    keyed: RequestKey,
    next: Parameters<Stage>[0],
    done: (err: unknown) => void,
  ) {
    this.#r = r;
    this.#s = s;
    this.#controls = controls;
    this.#keyed = keyed;
    this.#next = next;
    this.#done = done;
    this.#svc = r.svc;
    this.#store = r.svc.cache;
  }

  start(): void {
    if (this.#controls.noCache) return this.#miss('refresh');
    const got = this.#bounded(() => this.#store.get(this.#keyed.key), 'lookup');
    if (got instanceof Promise)
      got.then(
        (e) => this.#afterExact(e),
        (err) => this.#done(err),
      );
    else this.#afterExact(got);
  }

  #afterExact(entry: CacheEntry | null | undefined): void {
    const usable = entry === undefined ? null : this.#usable(entry);
    if (usable !== null) return this.#hit({ entry: usable, similarity: this.#s.mode === 'semantic' ? 1 : null });
    if (this.#s.semantic === null || this.#keyed.semantic === null || this.#keyed.userTurns > this.#s.semantic.maxTurns)
      return this.#miss('miss');
    this.#searchByMeaning().then(
      (found) => (found === null ? this.#miss('miss') : this.#hit(found)),
      (err) => this.#done(err),
    );
  }

  /** Embeds the last user turn and asks the store for the nearest entry of the same context. */
  async #searchByMeaning(): Promise<Found> {
    const semantic = this.#s.semantic as NonNullable<CacheSettings['semantic']>;
    const turn = this.#keyed.semantic as NonNullable<RequestKey['semantic']>;
    let vector: Float32Array;
    try {
      vector = await embed(this.#r.x, semantic.embeddingRoute, turn.text, semantic.timeoutMs);
    } catch (err) {
      if (!(err instanceof EmbeddingFailed)) throw err;
      this.#failure('embed', err);
      return null;
    }
    this.#semantic = { context: turn.context, vector, maxEntries: semantic.maxEntriesPerContext };
    const near = await this.#bounded(() => this.#store.nearest(turn.context, vector), 'lookup');
    if (near === undefined || near === null) return null;
    this.#nearest = near.similarity;
    if (near.similarity < semantic.threshold) return null;
    const entry = await this.#bounded(() => this.#store.get(near.key), 'lookup');
    const usable = entry === undefined ? null : this.#usable(entry);
    return usable === null ? null : { entry: usable, similarity: near.similarity };
  }

  /** An entry this request may be given: of its endpoint and protocol, young enough for its `max-age`. */
  #usable(entry: CacheEntry | null): CacheEntry | null {
    if (entry === null) return null;
    const request = this.#r.request;
    if (entry.operation !== request.operation || entry.protocol !== protocolOf(request)) return null;
    const maxAge = this.#controls.maxAgeS;
    if (maxAge !== null && Date.now() - entry.createdAtMs > maxAge * 1000) return null;
    return entry;
  }

  /**
   * A store call bounded by lookup_timeout_ms: its answer, or undefined when it failed or
   * took too long (counted; the request goes on as a miss). The memory store answers at
   * once and is not wrapped.
   */
  #bounded<T>(call: () => T | Promise<T>, operation: string): T | undefined | Promise<T | undefined> {
    let answer: T | Promise<T>;
    try {
      answer = call();
    } catch (err) {
      this.#failure(operation, err);
      return undefined;
    }
    if (!(answer instanceof Promise)) return answer;
    const ms = this.#s.lookupTimeoutMs;
    return new Promise<T | undefined>((resolve) => {
      const timer = setTimeout(() => {
        this.#failure(operation, new Error(`no answer within lookup_timeout_ms (${ms} ms)`));
        resolve(undefined);
      }, ms);
      answer.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (err: unknown) => {
          clearTimeout(timer);
          this.#failure(operation, err);
          resolve(undefined);
        },
      );
    });
  }

  #failure(operation: string, err: unknown): void {
    this.#failed = true;
    noteCacheError(this.#svc, operation, err);
  }

  #hit(found: NonNullable<Found>): void {
    const { entry, similarity } = found;
    if (serveHit(this.#r, entry, similarity, this.#done)) return;
    // An entry this version cannot replay: counted, and answered as a miss (its answer replaces it).
    this.#failure('replay', new Error(`the entry ${entry.key} cannot be replayed`));
    this.#miss('miss');
  }

  #miss(result: 'miss' | 'refresh'): void {
    const r = this.#r;
    const x = r.x;
    const counted = result === 'miss' && this.#failed ? 'error' : result;
    x.cacheLooked(outcome(counted, r.request.model, this.#keyed.key, { similarity: this.#nearest }));
    const slot = new MissSlot(r, this.#s, this.#keyed.key, result, this.#controls.ttlS, this.#semantic);
    this.#next(withSlot(r, slot), (err) => {
      if (err === null || err === undefined) slot.settle();
      this.#done(err);
    });
  }
}
