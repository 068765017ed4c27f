// The gateway's own store of the Responses API's state: the responses it served (their
// input items, output items and usage, as the Response object the client was given) and
// the Conversations API's conversations and their items. It is what lets a conversation
// outlive the provider that answered a turn: the history is the gateway's, and any
// candidate of any protocol can be sent it. Three backends behind one interface: memory
// (one replica), redis (a fleet) and the database (SQLite or Postgres).

/** A Responses API item (a message, function_call, function_call_output, reasoning, mcp_call...), as JSON, always with an `id`. */
export type Item = Readonly<Record<string, unknown>> & { readonly id: string };

/** A response the gateway served and stored. */
export interface ResponseRecord {
  readonly id: string;
  /** The team that created it (null on a gateway without keys): only that team may read, delete or continue it. */
  readonly team: string | null;
  /** The route (requested model) it was created under. */
  readonly model: string;
  /** Unix seconds. */
  readonly createdAt: number;
  /** The response it continued, and every one before that, oldest first: the chain is read in one round trip. */
  readonly ancestors: readonly string[];
  /** The conversation it was created in, or null. */
  readonly conversation: string | null;
  /** This turn's input items, in order, each with its id (a string input became one user message item). */
  readonly input: readonly Item[];
  /** The Response object as the client was given it (`output`, `usage`, `status`...). */
  readonly response: Readonly<Record<string, unknown>>;
  /**
   * The provider identity whose own Responses API wrote the output (and, with `store`, keeps
   * it too): its items may go back to it by reference. Absent when the gateway wrote them
   * (a translated answer, its own tools' loop).
   */
  readonly origin?: string;
}

/** An item of a stored response, with what the response says of whose it is. */
export interface StoredItem {
  readonly item: Item;
  readonly team: string | null;
  /** The response's origin (ResponseRecord.origin). */
  readonly origin?: string;
}

export interface ConversationRecord {
  readonly id: string;
  readonly team: string | null;
  /** Unix seconds. */
  readonly createdAt: number;
  readonly metadata: Readonly<Record<string, string>>;
}

/** A page of a list endpoint, as OpenAI's list objects give it. */
export interface ItemPage {
  readonly data: readonly Item[];
  readonly hasMore: boolean;
}

export interface PageQuery {
  /** An item id: the page starts after it (in the order asked for); absent = from the start; an id the conversation does not hold = an empty page. */
  readonly after?: string;
  /** 1..100. */
  readonly limit: number;
  readonly order: 'asc' | 'desc';
}

/**
 * The store could not be read or written (Redis unreachable, a database error). The request
 * path answers 503 `store_unavailable` for a read, and counts a failed write.
 */
export class ResponseStoreUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ResponseStoreUnavailable';
  }
}

/** `routing.responses`' bounds, as a reload applies them. */
export interface StoreLimits {
  readonly ttlS: number;
  readonly maxEntries: number;
  readonly retentionDays: number;
}

/**
 * Every method may throw (or reject with) ResponseStoreUnavailable. A missing id is
 * `undefined` / `false`, never an error. The store does not check teams: the caller does,
 * with the record's `team`. Ids are the caller's to make (unique, prefixed as OpenAI's).
 */
export interface ResponseStore {
  readonly kind: 'memory' | 'redis' | 'database';
  putResponse(record: ResponseRecord): Promise<void>;
  getResponse(id: string): Promise<ResponseRecord | undefined>;
  /** Several at once (a chain's ancestors), in the order asked; a missing one is undefined. */
  getResponses(ids: readonly string[]): Promise<(ResponseRecord | undefined)[]>;
  /** True when it existed. */
  deleteResponse(id: string): Promise<boolean>;
  /**
   * An item of a stored response (input or output), by its id, with the response's team:
   * what an `item_reference` input item names. Undefined when no stored response holds it.
   */
  getResponseItem(itemId: string): Promise<StoredItem | undefined>;

  createConversation(record: ConversationRecord, items: readonly Item[]): Promise<void>;
  getConversation(id: string): Promise<ConversationRecord | undefined>;
  /** Replaces the metadata; the updated record, or undefined when there is no such conversation. */
  updateConversation(id: string, metadata: Readonly<Record<string, string>>): Promise<ConversationRecord | undefined>;
  /** Deletes the conversation and its items; true when it existed. */
  deleteConversation(id: string): Promise<boolean>;
  /** Appends items at the end, in order; false when there is no such conversation. Each item's id is new to the conversation (the database skips a repeat). */
  appendItems(conversation: string, items: readonly Item[]): Promise<boolean>;
  /** A page of the conversation's items; undefined when there is no such conversation. */
  listItems(conversation: string, page: PageQuery): Promise<ItemPage | undefined>;
  /**
   * Every item, oldest first (a response's context): the first `max` of them (a caller asks
   * for one more than it accepts, to tell a conversation that is too long); undefined when
   * there is no such conversation.
   */
  allItems(conversation: string, max: number): Promise<readonly Item[] | undefined>;
  getItem(conversation: string, itemId: string): Promise<Item | undefined>;
  deleteItem(conversation: string, itemId: string): Promise<boolean>;

  /**
   * A reload's new bounds: each backend takes the ones it keeps by (memory: ttlS and
   * maxEntries; redis: ttlS, for keys written from now on; database: retentionDays).
   * Which backend it is takes a restart.
   */
  configure(limits: StoreLimits): void;
  /** Drops what is past retention (database; memory and redis expire by TTL). Returns how many responses went. */
  prune?(nowMs: number): Promise<number>;
  close(): Promise<void>;
}
