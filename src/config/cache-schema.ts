import { z } from 'zod';
import { positiveInt, redisUrlSchema, secretRefSchema, tlsSchema } from './schema-parts.js';

// `cache`: the response cache's store and bounds (top level), and the per-route settings
// that turn it on (`routing.routes.<model>.cache`); a team or a key may only turn it off.
// See docs/cache.md and docs/decisions/0041-response-cache.md.

const ttlS = positiveInt.max(31_536_000);

export const cacheSchema = z
  .strictObject({
    /** `memory`: this replica alone (bounded by max_bytes); `redis`: the fleet, on governance's Redis unless redis_url is given. */
    store: z.enum(['memory', 'redis'], { error: 'must be "memory" or "redis"' }).default('memory'),
    redis_url: redisUrlSchema('cache').optional(),
    redis_username: secretRefSchema.optional(),
    redis_password: secretRefSchema.optional(),
    redis_tls: tlsSchema.optional(),
    /** The memory store's bound: past it the least recently used entries go first. */
    max_bytes: positiveInt.max(1_099_511_627_776).default(268_435_456),
    /** An answer larger than this is never stored. */
    max_entry_bytes: positiveInt.max(1_073_741_824).default(4_194_304),
    /** A route's entries live this long unless its `cache.ttl_s` says otherwise. */
    default_ttl_s: ttlS.default(3600),
    /** Whose answers may be reused by whom: the caller's team's, its key's alone, or anyone's. */
    scope: z.enum(['team', 'key', 'global'], { error: 'must be "team", "key" or "global"' }).default('team'),
    /** A lookup (and a semantic search) slower than this is a miss: a slow store never makes a slow request. */
    lookup_timeout_ms: positiveInt.max(10_000).default(50),
  })
  .superRefine((c, ctx) => {
    if (c.store === 'memory') {
      for (const key of ['redis_url', 'redis_username', 'redis_password', 'redis_tls'] as const)
        if (c[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'only applies when store is "redis"' });
      return;
    }
    // The cache's own credentials go with its own URL; without one it uses governance's Redis and credentials.
    for (const key of ['redis_username', 'redis_password', 'redis_tls'] as const)
      if (c[key] !== undefined && c.redis_url === undefined)
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: "applies with cache.redis_url only (without it the cache uses governance's Redis and credentials)",
        });
    if (c.redis_username !== undefined && c.redis_password === undefined)
      ctx.addIssue({ code: 'custom', path: ['redis_password'], message: 'is required with cache.redis_username' });
  });

const semanticSchema = z.strictObject({
  /** The route (of this gateway) that embeds the last user turn: its failover and its cost apply, billed to the caller's team. */
  embedding_route: z.string().min(1).max(256),
  /** The least cosine similarity that is a hit. */
  threshold: z.number().min(0).max(1).default(0.95),
  /** A conversation with more user turns than this is cached exactly, never by meaning (1: single-turn only). */
  max_turns: positiveInt.max(1000).default(1),
  /** Vectors kept per scope and context; the oldest go first. */
  max_entries_per_context: positiveInt.max(100_000).default(1000),
  /** How long the embedding may take before the lookup is a miss. */
  timeout_ms: positiveInt.max(60_000).default(2000),
});

/** A route's cache: `off`, or its mode and settings. */
export const routeCacheSchema = z.union(
  [
    z.literal('off'),
    z
      .strictObject({
        mode: z.enum(['off', 'exact', 'semantic'], { error: 'must be "off", "exact" or "semantic"' }),
        /** Defaults to cache.default_ttl_s. */
        ttl_s: ttlS.optional(),
        /** Store an answer that came from a candidate after the first failed (off: a fallback's answer never stands for the route's). */
        store_fallbacks: z.boolean().default(false),
        /** Store answers that call tools (off: a tool call depends on state the cache cannot see). */
        cache_tool_calls: z.boolean().default(false),
        semantic: semanticSchema.optional(),
      })
      .superRefine((c, ctx) => {
        if (c.mode === 'semantic' && c.semantic === undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['semantic'],
            message: 'is required when mode is "semantic" (its embedding_route at least)',
          });
        if (c.mode !== 'semantic' && c.semantic !== undefined)
          ctx.addIssue({ code: 'custom', path: ['semantic'], message: 'only applies when mode is "semantic"' });
      }),
  ],
  { error: 'must be "off" or {mode: off | exact | semantic, ...}' },
);

/** A team's or key's cache: it may only turn the route's off. */
export const callerCacheSchema = z.union([z.literal('off'), z.strictObject({ mode: z.literal('off') })], {
  error: 'must be "off" (a team or key can only turn the cache off)',
});

export type CacheConfig = z.infer<typeof cacheSchema>;
export type RouteCacheConfig = z.infer<typeof routeCacheSchema>;
