import type { CacheConfig, RouteCacheConfig } from '../../config/index.js';
import type { Principal } from '../../governance/index.js';
import type { Generation, Keyring } from '../../live/index.js';
import { callerMemo } from '../caller-memo.js';

// Whether, and how, the response cache serves a request: the route's `cache` (off unless it
// says otherwise), which the caller's team or key may turn off but never on, with the
// top-level `cache` block's bounds. Resolved once per route and caller for a generation and
// keyring pair, so a request pays a map lookup; a route without a cache not even that.

export interface SemanticSettings {
  readonly embeddingRoute: string;
  readonly threshold: number;
  readonly maxTurns: number;
  readonly maxEntriesPerContext: number;
  readonly timeoutMs: number;
}

/** The cache as it applies to one route and caller. */
export interface CacheSettings {
  readonly mode: 'exact' | 'semantic';
  readonly ttlS: number;
  readonly storeFallbacks: boolean;
  readonly cacheToolCalls: boolean;
  /** Null in exact mode. */
  readonly semantic: SemanticSettings | null;
  readonly scope: CacheConfig['scope'];
  readonly maxEntryBytes: number;
  readonly lookupTimeoutMs: number;
}

/** `off`: the route has a cache, and the caller's team or key turned it off; null: the route has none. */
export type CallerCache = CacheSettings | 'off' | null;

/** The cache of `principal`'s requests for `model`. */
export function cacheFor(gen: Generation, keyring: Keyring, principal: Principal, model: string): CallerCache {
  const route = gen.config.routing.routes?.[model]?.cache;
  if (route === undefined || route === 'off' || route.mode === 'off') return null;
  return resolvedFor(gen, keyring, principal, model);
}

const resolvedFor = callerMemo((gen, keyring, principal, model) => {
  const route = gen.config.routing.routes?.[model]?.cache as Exclude<RouteCacheConfig, 'off'>;
  return resolve(gen.config.cache, route, keyring, principal);
});

function resolve(
  cache: CacheConfig,
  route: Exclude<RouteCacheConfig, 'off'>,
  keyring: Keyring,
  principal: Principal,
): CacheSettings | 'off' {
  if (principal.team !== null && keyring.teams[principal.team]?.cache !== undefined) return 'off';
  if (principal.keyId !== null && principal.grant === undefined && keyring.keys.find((k) => k.id === principal.keyId)?.cache !== undefined)
    return 'off';
  const s = route.semantic;
  return Object.freeze({
    mode: route.mode === 'semantic' ? 'semantic' : 'exact',
    ttlS: route.ttl_s ?? cache.default_ttl_s,
    storeFallbacks: route.store_fallbacks,
    cacheToolCalls: route.cache_tool_calls,
    semantic:
      route.mode === 'semantic' && s !== undefined
        ? Object.freeze({
            embeddingRoute: s.embedding_route,
            threshold: s.threshold,
            maxTurns: s.max_turns,
            maxEntriesPerContext: s.max_entries_per_context,
            timeoutMs: s.timeout_ms,
          })
        : null,
    scope: cache.scope,
    maxEntryBytes: cache.max_entry_bytes,
    lookupTimeoutMs: cache.lookup_timeout_ms,
  });
}
