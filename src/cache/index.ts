// cache/: the response cache's entries and where they live. A stored answer (CacheEntry),
// the store interface both backends answer (CacheStore: one replica's memory, bounded by
// bytes and least recently used out first, or Redis, shared by the fleet), and the vector
// arithmetic of the semantic lookup. A leaf below the request path: it imports providers/
// (types only, the usage an entry reports) and nothing else; request/ looks up and stores,
// server/ builds the store once at start. See docs/decisions/0041-response-cache.md.

export { AnswerCapture, type AnswerCaptureOptions, type CapturedAnswer } from './captured.js';
export { type CacheStoreDeps, type CacheStoreSettings, createCacheStore } from './create-store.js';
export { type CachedOperation, type CachedProtocol, type CacheEntry, type EntryOrigin, entryBytes, type NearestMatch } from './entry.js';
export {
  DEFAULTS,
  KEY_HEADERS,
  KEY_PARTS,
  type KeyInput,
  type KeyPart,
  keyTableMarkdown,
  LEFT_OUT,
  type RequestKey,
  requestKey,
} from './key.js';
export { MemoryCacheStore, type MemoryCacheStoreOptions } from './memory-store.js';
export { type CacheRedisTls, RedisCacheStore, type RedisCacheStoreOptions } from './redis-store.js';
export { type Fresh, type FreshIdKind, freshIds, type ReplayOptions, replayEvents, replayWhole } from './replay.js';
export { type CacheStore, CacheStoreError, type DropFilter } from './store.js';
export { cosineSimilarity, vectorFromBase64, vectorToBase64 } from './vector.js';
