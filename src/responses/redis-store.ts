import { Redis } from 'ioredis';
import { redisConnection } from '../redis/index.js';
import { itemIdsOf, itemOf, pageOf, storedItem } from './pages.js';
import {
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

/** TLS for a rediss:// URL: PEM text (not paths); absent parts are the system's CAs and no client certificate. */
export interface ResponseRedisTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly serverName?: string;
}

export interface RedisResponseStoreOptions {
  /** redis:// or rediss://, without a password (that comes as `password`). */
  readonly url: string;
  readonly username?: string;
  /** Never logged, never in an error message. */
  readonly password?: string;
  readonly tls?: ResponseRedisTls;
  /** Prefix of every key (the governance store's): one deployment, one prefix. */
  readonly keyPrefix: string;
  /** Every key expires this long after its last write. */
  readonly ttlS: number;
  /** A command that takes longer fails (ResponseStoreUnavailable). Default 500. */
  readonly commandTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Connection events, for the log: never holds the password. */
  readonly onConnectionEvent?: (event: 'ready' | 'error' | 'reconnecting', detail: string) => void;
}

/**
 * Appends to a conversation only while it exists, and restarts both keys' expiry: one
 * round trip, and a conversation deleted meanwhile does not come back as a bare item list.
 * KEYS: meta, items. ARGV: ttl seconds, then the items' JSON.
 */
const APPEND = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 2, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 1
`;

type AppendCommand = (meta: string, items: string, ttlS: number, ...json: string[]) => Promise<number>;

/**
 * Responses and conversations in Redis, shared by every replica. `resp:<id>` holds the
 * record as JSON and `respitem:<itemId>` the id of the response holding an item;
 * `conv:<id>` holds a conversation's record and `convitems:<id>` its items, oldest first.
 * Every key expires `ttlS` after its last write. A down Redis fails fast: no offline
 * queue, no per-command retries, a command timeout; the client reconnects by itself.
 */
export class RedisResponseStore implements ResponseStore {
  readonly kind = 'redis' as const;
  readonly #redis: Redis & { syAppend: AppendCommand };
  readonly #prefix: string;
  #ttlS: number;

  constructor(options: RedisResponseStoreOptions) {
    this.#prefix = options.keyPrefix;
    this.#ttlS = options.ttlS;
    const notify = options.onConnectionEvent ?? (() => undefined);
    const { href, options: connection } = redisConnection(options);
    const redis = new Redis(href, {
      ...connection,
      // A request waiting on a store that is down would hold its client for nothing: the
      // command fails at once while disconnected, and within the timeout when Redis hangs.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 500,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1000),
      reconnectOnError: () => false,
    });
    redis.defineCommand('syAppend', { numberOfKeys: 2, lua: APPEND });
    redis.on('error', (err: Error) => notify('error', err.message));
    redis.on('reconnecting', () => notify('reconnecting', 'reconnecting to Redis'));
    redis.on('ready', () => notify('ready', 'connected to Redis'));
    this.#redis = redis as Redis & { syAppend: AppendCommand };
  }

  /** Resolves true once connected, false after timeoutMs (the store still reconnects by itself). */
  ready(timeoutMs: number): Promise<boolean> {
    if (this.#redis.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.#redis.off('ready', onReady);
        resolve(ok);
      };
      const onReady = (): void => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.#redis.on('ready', onReady);
    });
  }

  /** A new TTL applies to the keys written from now on; those already there keep theirs. */
  configure(limits: StoreLimits): void {
    this.#ttlS = limits.ttlS;
  }

  async putResponse(record: ResponseRecord): Promise<void> {
    const tx = this.#redis.multi().set(this.#key('resp', record.id), JSON.stringify(record), 'EX', this.#ttlS);
    for (const itemId of itemIdsOf(record)) tx.set(this.#key('respitem', itemId), record.id, 'EX', this.#ttlS);
    await this.#exec(tx);
  }

  async getResponse(id: string): Promise<ResponseRecord | undefined> {
    return (await this.getResponses([id]))[0];
  }

  async getResponses(ids: readonly string[]): Promise<(ResponseRecord | undefined)[]> {
    if (ids.length === 0) return [];
    const values = await this.#call(() => this.#redis.mget(ids.map((id) => this.#key('resp', id))));
    return values.map((v) => (v === null ? undefined : (JSON.parse(v) as ResponseRecord)));
  }

  async deleteResponse(id: string): Promise<boolean> {
    const record = await this.getResponse(id);
    if (record === undefined) return false;
    const keys = [this.#key('resp', id), ...itemIdsOf(record).map((itemId) => this.#key('respitem', itemId))];
    // An item index entry a later response took over is dropped too: that item is then
    // found by that response's id no more, a rarity not worth a script.
    await this.#call(() => this.#redis.del(...keys));
    return true;
  }

  async getResponseItem(itemId: string): Promise<StoredItem | undefined> {
    const responseId = await this.#call(() => this.#redis.get(this.#key('respitem', itemId)));
    if (responseId === null) return undefined;
    const record = await this.getResponse(responseId);
    const item = record === undefined ? undefined : itemOf(record, itemId);
    return item === undefined || record === undefined ? undefined : storedItem(record, item);
  }

  async createConversation(record: ConversationRecord, items: readonly Item[]): Promise<void> {
    const itemsKey = this.#key('convitems', record.id);
    const tx = this.#redis.multi().set(this.#key('conv', record.id), JSON.stringify(record), 'EX', this.#ttlS).del(itemsKey);
    if (items.length > 0) tx.rpush(itemsKey, ...items.map((i) => JSON.stringify(i))).expire(itemsKey, this.#ttlS);
    await this.#exec(tx);
  }

  async getConversation(id: string): Promise<ConversationRecord | undefined> {
    const value = await this.#call(() => this.#redis.get(this.#key('conv', id)));
    return value === null ? undefined : (JSON.parse(value) as ConversationRecord);
  }

  async updateConversation(id: string, metadata: Readonly<Record<string, string>>): Promise<ConversationRecord | undefined> {
    const record = await this.getConversation(id);
    if (record === undefined) return undefined;
    const updated: ConversationRecord = { ...record, metadata: { ...metadata } };
    await this.#exec(
      this.#redis
        .multi()
        .set(this.#key('conv', id), JSON.stringify(updated), 'EX', this.#ttlS)
        .expire(this.#key('convitems', id), this.#ttlS),
    );
    return updated;
  }

  async deleteConversation(id: string): Promise<boolean> {
    const removed = await this.#call(() => this.#redis.del(this.#key('conv', id), this.#key('convitems', id)));
    return removed > 0;
  }

  async appendItems(conversation: string, items: readonly Item[]): Promise<boolean> {
    const json = items.map((i) => JSON.stringify(i));
    const done = await this.#call(() =>
      this.#redis.syAppend(this.#key('conv', conversation), this.#key('convitems', conversation), this.#ttlS, ...json),
    );
    return done === 1;
  }

  async listItems(conversation: string, page: PageQuery): Promise<ItemPage | undefined> {
    // The whole list, then the page: an `after` cursor is an item id, which only a scan
    // finds, and a conversation is bounded (max_items).
    const items = await this.#items(conversation);
    return items === undefined ? undefined : pageOf(items, page);
  }

  async allItems(conversation: string, max: number): Promise<readonly Item[] | undefined> {
    return max <= 0 ? (await this.getConversation(conversation)) && [] : this.#range(conversation, max - 1);
  }

  async getItem(conversation: string, itemId: string): Promise<Item | undefined> {
    return (await this.#items(conversation))?.find((i) => i.id === itemId);
  }

  async deleteItem(conversation: string, itemId: string): Promise<boolean> {
    const key = this.#key('convitems', conversation);
    const values = await this.#call(() => this.#redis.lrange(key, 0, -1));
    const value = values.find((v) => (JSON.parse(v) as Item).id === itemId);
    if (value === undefined) return false;
    const removed = await this.#call(() => this.#redis.lrem(key, 1, value));
    return removed > 0;
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }

  #items(conversation: string): Promise<Item[] | undefined> {
    return this.#range(conversation, -1);
  }

  /** The items from the first to `stop` (LRANGE's: -1 is the last), or undefined when there is no such conversation. */
  async #range(conversation: string, stop: number): Promise<Item[] | undefined> {
    const [[, exists], [, values]] = (await this.#exec(
      this.#redis.multi().exists(this.#key('conv', conversation)).lrange(this.#key('convitems', conversation), 0, stop),
    )) as [[null, number], [null, string[]]];
    return exists === 0 ? undefined : values.map((v) => JSON.parse(v) as Item);
  }

  #key(kind: 'resp' | 'respitem' | 'conv' | 'convitems', id: string): string {
    return `${this.#prefix}${kind}:${id}`;
  }

  async #call<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (err) {
      throw unavailable(err);
    }
  }

  /** A MULTI's replies; any command's error fails the whole call. */
  async #exec(tx: ReturnType<Redis['multi']>): Promise<[Error | null, unknown][]> {
    const replies = await this.#call(() => tx.exec());
    if (replies === null) throw new ResponseStoreUnavailable('response store (Redis): transaction aborted');
    const failed = replies.find(([err]) => err !== null);
    if (failed !== undefined) throw unavailable(failed[0]);
    return replies;
  }
}

function unavailable(err: unknown): ResponseStoreUnavailable {
  return new ResponseStoreUnavailable(`response store (Redis) failed: ${(err as Error).message}`, { cause: err });
}
