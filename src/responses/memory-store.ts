import { itemIdsOf, itemOf, pageOf, storedItem } from './pages.js';
import type { ConversationRecord, Item, ItemPage, PageQuery, ResponseRecord, ResponseStore, StoredItem, StoreLimits } from './store.js';

export interface MemoryStoreOptions {
  /** A response or conversation is forgotten this long after it was last written. */
  readonly ttlMs: number;
  /** Most responses kept, and most conversations: beyond it the oldest written go first. */
  readonly maxEntries: number;
  /** Milliseconds now; tests pass a clock they move. */
  readonly now?: () => number;
}

interface Held<T> {
  readonly value: T;
  readonly expiresAtMs: number;
}

interface HeldConversation {
  record: ConversationRecord;
  readonly items: Item[];
}

/**
 * One replica's store: maps in write order, so the oldest is the first key. Expiry is read
 * on access (a lookup past it misses and drops the entry), and a write past the bound
 * drops the oldest; nothing runs on a timer.
 */
export class MemoryResponseStore implements ResponseStore {
  readonly kind = 'memory' as const;
  #ttlMs: number;
  #maxEntries: number;
  readonly #now: () => number;
  readonly #responses = new Map<string, Held<ResponseRecord>>();
  /** Item id -> the response holding it (the latest written, when an item was sent again). */
  readonly #itemIndex = new Map<string, string>();
  readonly #conversations = new Map<string, Held<HeldConversation>>();

  constructor(options: MemoryStoreOptions) {
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
  }

  /** New bounds apply from the next write: a lower max_entries evicts then, a new TTL counts from each entry's next write. */
  configure(limits: StoreLimits): void {
    this.#ttlMs = limits.ttlS * 1000;
    this.#maxEntries = limits.maxEntries;
  }

  async putResponse(record: ResponseRecord): Promise<void> {
    this.#dropResponse(record.id);
    this.#responses.set(record.id, { value: record, expiresAtMs: this.#now() + this.#ttlMs });
    for (const itemId of itemIdsOf(record)) this.#itemIndex.set(itemId, record.id);
    while (this.#responses.size > this.#maxEntries) this.#dropResponse(this.#responses.keys().next().value as string);
  }

  async getResponse(id: string): Promise<ResponseRecord | undefined> {
    return this.#liveResponse(id);
  }

  async getResponses(ids: readonly string[]): Promise<(ResponseRecord | undefined)[]> {
    return ids.map((id) => this.#liveResponse(id));
  }

  async deleteResponse(id: string): Promise<boolean> {
    const existed = this.#liveResponse(id) !== undefined;
    this.#dropResponse(id);
    return existed;
  }

  async getResponseItem(itemId: string): Promise<StoredItem | undefined> {
    const responseId = this.#itemIndex.get(itemId);
    const record = responseId === undefined ? undefined : this.#liveResponse(responseId);
    const item = record === undefined ? undefined : itemOf(record, itemId);
    return item === undefined || record === undefined ? undefined : storedItem(record, item);
  }

  async createConversation(record: ConversationRecord, items: readonly Item[]): Promise<void> {
    this.#conversations.delete(record.id);
    this.#conversations.set(record.id, { value: { record, items: [...items] }, expiresAtMs: this.#now() + this.#ttlMs });
    while (this.#conversations.size > this.#maxEntries) this.#conversations.delete(this.#conversations.keys().next().value as string);
  }

  async getConversation(id: string): Promise<ConversationRecord | undefined> {
    return this.#liveConversation(id)?.record;
  }

  async updateConversation(id: string, metadata: Readonly<Record<string, string>>): Promise<ConversationRecord | undefined> {
    const held = this.#touch(id);
    if (held === undefined) return undefined;
    held.record = { ...held.record, metadata: { ...metadata } };
    return held.record;
  }

  async deleteConversation(id: string): Promise<boolean> {
    const existed = this.#liveConversation(id) !== undefined;
    this.#conversations.delete(id);
    return existed;
  }

  async appendItems(conversation: string, items: readonly Item[]): Promise<boolean> {
    const held = this.#touch(conversation);
    if (held === undefined) return false;
    held.items.push(...items);
    return true;
  }

  async listItems(conversation: string, page: PageQuery): Promise<ItemPage | undefined> {
    const held = this.#liveConversation(conversation);
    return held === undefined ? undefined : pageOf(held.items, page);
  }

  async allItems(conversation: string, max: number): Promise<readonly Item[] | undefined> {
    return this.#liveConversation(conversation)?.items.slice(0, max);
  }

  async getItem(conversation: string, itemId: string): Promise<Item | undefined> {
    return this.#liveConversation(conversation)?.items.find((i) => i.id === itemId);
  }

  async deleteItem(conversation: string, itemId: string): Promise<boolean> {
    const held = this.#liveConversation(conversation);
    const at = held === undefined ? -1 : held.items.findIndex((i) => i.id === itemId);
    if (held === undefined || at < 0) return false;
    held.items.splice(at, 1);
    this.#touch(conversation);
    return true;
  }

  async close(): Promise<void> {
    this.#responses.clear();
    this.#itemIndex.clear();
    this.#conversations.clear();
  }

  #liveResponse(id: string): ResponseRecord | undefined {
    const held = this.#responses.get(id);
    if (held === undefined) return undefined;
    if (held.expiresAtMs > this.#now()) return held.value;
    this.#dropResponse(id);
    return undefined;
  }

  #dropResponse(id: string): void {
    const held = this.#responses.get(id);
    if (held === undefined) return;
    this.#responses.delete(id);
    for (const itemId of itemIdsOf(held.value)) if (this.#itemIndex.get(itemId) === id) this.#itemIndex.delete(itemId);
  }

  #liveConversation(id: string): HeldConversation | undefined {
    const held = this.#conversations.get(id);
    if (held === undefined) return undefined;
    if (held.expiresAtMs > this.#now()) return held.value;
    this.#conversations.delete(id);
    return undefined;
  }

  /** A write to a conversation: its expiry starts again, and it becomes the newest. */
  #touch(id: string): HeldConversation | undefined {
    const live = this.#liveConversation(id);
    if (live === undefined) return undefined;
    this.#conversations.delete(id);
    this.#conversations.set(id, { value: live, expiresAtMs: this.#now() + this.#ttlMs });
    return live;
  }
}
