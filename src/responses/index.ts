/**
 * The gateway's own store of the Responses API's state: the responses it served and the
 * Conversations API's conversations and items, so that a conversation outlives the
 * provider, the candidate and the replica that answered a turn. One interface
 * (ResponseStore), three backends: memory (one replica), redis (a fleet, the governance
 * store's Redis) and the database (SQLite or Postgres, pruned by retention).
 *
 * Boundary: imports database/ (its surface) and nothing else; config/ is adapted by
 * server/, which builds the store once at start. request/, server/ and cli/ may import it.
 */

export { createResponseStore, type ResponseStoreDeps, type ResponseStoreSettings } from './create-store.js';
export { DatabaseResponseStore, type DatabaseStoreOptions } from './database-store.js';
export { type IdPrefix, newId } from './ids.js';
export { MemoryResponseStore, type MemoryStoreOptions } from './memory-store.js';
export { pageOf } from './pages.js';
export { RedisResponseStore, type RedisResponseStoreOptions, type ResponseRedisTls } from './redis-store.js';
export {
  type ConversationRecord,
  type Item,
  type ItemPage,
  type PageQuery,
  type ResponseRecord,
  type ResponseStore,
  ResponseStoreUnavailable,
  type StoredItem,
  type StoreLimits,
} from './store.js';
