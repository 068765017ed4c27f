import { Redis } from 'ioredis';
import { redisConnection } from '../redis/index.js';
import { type CacheEntry, entryBytes, type NearestMatch } from './entry.js';
import { ADD_VECTOR, BYTES, DROP, PUT } from './redis-scripts.js';
import { type CacheStore, CacheStoreError, type DropFilter } from './store.js';
import { cosineWithNorms, vectorFromBytes, vectorNorm, vectorToBytes } from './vector.js';

/** TLS for a rediss:// URL: PEM text (not paths); absent parts are the system's CAs and no client certificate. */
export interface CacheRedisTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly serverName?: string;
}

export interface RedisCacheStoreOptions {
  /** redis:// or rediss://, without a password (that comes as `password`). */
  readonly url: string;
  readonly username?: string;
  /** Never logged, never in an error message. */
  readonly password?: string;
  readonly tls?: CacheRedisTls;
  /** The deployment's key prefix (the governance store's); the cache's keys live under `<keyPrefix>cache:`. */
  readonly keyPrefix: string;
  /** A command that takes longer fails (CacheStoreError). Default 500. */
  readonly commandTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Connection events, for the log: never holds the password. */
  readonly onConnectionEvent?: (event: 'ready' | 'error' | 'reconnecting', detail: string) => void;
}

type Script = (...args: (string | number | Buffer)[]) => Promise<unknown>;
type CacheRedis = Redis & { syCachePut: Script; syCacheAddVector: Script; syCacheDrop: Script; syCacheBytes: Script };

/** How many digests one SCAN page (and so one drop script) carries. */
const DROP_PAGE = 500;
/** How many of the nearest vectors one round trip checks for a live entry. */
const NEAREST_BATCH = 8;
/** Most expired entries one `bytes()` script forgets; past it the next call goes on. */
const SWEEP_LIMIT = 1000;

/**
 * The fleet's cache in Redis (layout in redis-scripts.ts). An entry expires in Redis at
 * createdAtMs + ttlS; a context's vectors are read whole and compared here, and a vector
 * whose entry is gone is skipped and removed. The byte count is this store's own index:
 * an entry stays counted until a write or a `bytes()` finds Redis has expired it.
 * A down Redis fails fast: no offline queue, no per-command retries, a command timeout;
 * the client reconnects by itself. Every failure is a CacheStoreError.
 */
export class RedisCacheStore implements CacheStore {
  readonly kind = 'redis' as const;
  readonly #redis: CacheRedis;
  /** `<keyPrefix>cache:`. */
  readonly #prefix: string;

  constructor(options: RedisCacheStoreOptions) {
    this.#prefix = `${options.keyPrefix}cache:`;
    const notify = options.onConnectionEvent ?? (() => undefined);
    const { href, options: connection } = redisConnection(options);
    const redis = new Redis(href, {
      ...connection,
      // A lookup waiting on a store that is down would only turn into a miss later: the
      // command fails at once while disconnected, and within the timeout when Redis hangs.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 500,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1000),
      reconnectOnError: () => false,
    });
    redis.defineCommand('syCachePut', { numberOfKeys: 4, lua: PUT });
    redis.defineCommand('syCacheAddVector', { numberOfKeys: 3, lua: ADD_VECTOR });
    redis.defineCommand('syCacheDrop', { numberOfKeys: 3, lua: DROP });
    redis.defineCommand('syCacheBytes', { numberOfKeys: 3, lua: BYTES });
    redis.on('error', (err: Error) => notify('error', err.message));
    redis.on('reconnecting', () => notify('reconnecting', 'reconnecting to Redis'));
    redis.on('ready', () => notify('ready', 'connected to Redis'));
    this.#redis = redis as CacheRedis;
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

  /** The entry, or null when there is none or it is another format's (v !== 1); an entry that is not JSON fails. */
  async get(key: string): Promise<CacheEntry | null> {
    const data = await this.#call(() => this.#redis.hget(this.#entryKey(key), 'data'));
    if (data === null) return null;
    let entry: CacheEntry;
    try {
      entry = JSON.parse(data) as CacheEntry;
    } catch (err) {
      throw new CacheStoreError('cache store (Redis): an entry is not valid JSON', { cause: err });
    }
    return typeof entry === 'object' && entry !== null && entry.v === 1 ? entry : null;
  }

  // The script is sent before put's first await: an addVector called right after (even
  // unawaited) runs after it on the one connection, and so finds the entry to note its context in.
  async put(entry: CacheEntry): Promise<void> {
    const expiresAtMs = entry.createdAtMs + entry.ttlS * 1000;
    const keys = [this.#entryKey(entry.key), this.#key('exp'), this.#key('size'), this.#key('bytes')];
    const data = JSON.stringify(entry);
    await this.#call(() => this.#redis.syCachePut(...keys, entry.key, entry.route, entry.team, entryBytes(entry), data, expiresAtMs));
  }

  async addVector(context: string, key: string, vector: Float32Array, ttlS: number, maxEntries: number): Promise<void> {
    const keys = [this.#key('v', context), this.#key('vz', context), this.#entryKey(key)];
    const ttlMs = Math.max(1, Math.round(ttlS * 1000));
    await this.#call(() => this.#redis.syCacheAddVector(...keys, key, vectorToBytes(vector), ttlMs, maxEntries, context));
  }

  async nearest(context: string, vector: Float32Array): Promise<NearestMatch | null> {
    const stored = await this.#call(() => this.#redis.hgetallBuffer(this.#key('v', context)));
    const norm = vectorNorm(vector);
    const dead: string[] = [];
    const ranked: NearestMatch[] = [];
    for (const [key, bytes] of Object.entries(stored)) {
      const v = vectorFromBytes(bytes);
      if (v === null) dead.push(key);
      else ranked.push({ key, similarity: cosineWithNorms(vector, norm, v, vectorNorm(v)) });
    }
    ranked.sort((a, b) => b.similarity - a.similarity);
    let best: NearestMatch | null = null;
    for (let at = 0; at < ranked.length && best === null; at += NEAREST_BATCH) {
      const batch = ranked.slice(at, at + NEAREST_BATCH);
      const pipeline = this.#redis.pipeline();
      for (const m of batch) pipeline.exists(this.#entryKey(m.key));
      const replies = await this.#call(() => pipeline.exec());
      for (const [i, m] of batch.entries()) {
        const [err, exists] = replies?.[i] ?? [new Error('no reply'), 0];
        if (err) throw failure(err);
        if (exists === 1) {
          best = m;
          break;
        }
        dead.push(m.key);
      }
    }
    // A key found dead may be stored again meanwhile and lose its fresh vector here: it is
    // then found by its exact key only, until its next store; not worth a script.
    if (dead.length > 0) {
      const vz = this.#key('vz', context);
      await this.#call(() =>
        this.#redis
          .multi()
          .hdel(this.#key('v', context), ...dead)
          .zrem(vz, ...dead)
          .exec(),
      );
    }
    return best;
  }

  async drop(filter: DropFilter): Promise<number> {
    const entries = `${this.#prefix}e:`;
    const match = `${globEscape(entries)}*`;
    const args = [
      this.#prefix,
      filter.route === undefined ? '' : '1',
      filter.route ?? '',
      filter.team === undefined ? '' : '1',
      filter.team ?? '',
    ];
    let dropped = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.#call(() => this.#redis.scan(cursor, 'MATCH', match, 'COUNT', DROP_PAGE));
      cursor = next;
      if (keys.length === 0) continue;
      const digests = keys.map((k) => k.slice(entries.length));
      const index = [this.#key('exp'), this.#key('size'), this.#key('bytes')];
      dropped += Number(await this.#call(() => this.#redis.syCacheDrop(...index, ...args, ...digests)));
    } while (cursor !== '0');
    return dropped;
  }

  /** The bytes of the entries this store's index holds, after forgetting those Redis has expired. */
  async bytes(): Promise<number> {
    const index = [this.#key('exp'), this.#key('size'), this.#key('bytes')];
    for (let round = 0; ; round += 1) {
      const [bytes, forgot] = (await this.#call(() => this.#redis.syCacheBytes(...index, SWEEP_LIMIT))) as [number, number];
      if (forgot < SWEEP_LIMIT || round >= 9) return Math.max(0, bytes);
    }
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }

  #entryKey(key: string): string {
    return this.#key('e', key);
  }

  #key(kind: 'e' | 'v' | 'vz' | 'exp' | 'size' | 'bytes', id?: string): string {
    return id === undefined ? `${this.#prefix}${kind}` : `${this.#prefix}${kind}:${id}`;
  }

  async #call<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (err) {
      throw failure(err);
    }
  }
}

function failure(err: unknown): CacheStoreError {
  return err instanceof CacheStoreError
    ? err
    : new CacheStoreError(`cache store (Redis) failed: ${(err as Error).message}`, { cause: err });
}

/** `text` matched literally by a SCAN pattern: a key prefix may hold `*`, `?`, `[` or `\`. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
