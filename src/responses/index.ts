// responses/: the gateway's own store of the Responses API's state (the responses it served,
// the Conversations API's conversations) behind one interface, with its ids.

export { type IdPrefix, newId } from './ids.js';
export {
  type ConversationRecord,
  type Item,
  type ItemPage,
  type PageQuery,
  type ResponseRecord,
  type ResponseStore,
  ResponseStoreUnavailable,
} from './store.js';
