import type { GatewayConfig } from '../config/index.js';
import type { CacheResult, CacheStats } from '../telemetry/index.js';

// The `cache` section of /admin/status and of the status page's data: which store, which
// routes cache and how, and per route and team what the lookups came to since the gateway
// started. Names and counts only: never a key, a prompt or an answer.

export interface CacheLookupsView {
  readonly route: string;
  /** `none` for an anonymous caller. */
  readonly team: string;
  /** Requests by result: hit, miss, refresh, bypass, error (each present). */
  readonly lookups: Readonly<Record<CacheResult, number>>;
  /** hits / (hits + misses + refreshes + errors); null before any of those. */
  readonly hit_rate: number | null;
  /** What the hits' entries cost when they were made, in USD. */
  readonly saved_usd: number;
  /** Answers kept as entries. */
  readonly stored: number;
}

export interface CacheView {
  /** `cache.store`: memory (this replica) or redis (the fleet). */
  readonly store: 'memory' | 'redis';
  /** The routes whose cache is on, and its mode (`exact`, `semantic`). */
  readonly routes: Readonly<Record<string, 'exact' | 'semantic'>>;
  /** Since start, by route then team; a pair with no lookup is absent. */
  readonly lookups: readonly CacheLookupsView[];
}

/** The serving config's cache, and the lookups since start; null when no route caches and none ever looked up. */
export function cacheView(config: Pick<GatewayConfig, 'cache' | 'routing'>, stats: CacheStats): CacheView | null {
  const routes: Record<string, 'exact' | 'semantic'> = {};
  for (const [model, route] of Object.entries(config.routing.routes ?? {})) {
    const cache = route.cache;
    if (typeof cache === 'object' && cache.mode !== 'off') routes[model] = cache.mode;
  }
  const rows = stats.view();
  if (Object.keys(routes).length === 0 && rows.length === 0) return null;
  return {
    store: config.cache.store,
    routes,
    lookups: rows.map((r) => ({
      route: r.route,
      team: r.team,
      lookups: r.lookups,
      hit_rate: r.hitRate,
      saved_usd: r.savedMicroUsd / 1e6,
      stored: r.stored,
    })),
  };
}
