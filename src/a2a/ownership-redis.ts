import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  type IdOwner,
  isTrackableId,
  type OwnedIdKind,
  type OwnershipOperation,
  type OwnershipStore,
  OwnershipStoreError,
  type OwnershipTtl,
  type RecordOutcome,
  type RecordResult,
  ttlMs,
} from './ownership.js';
import { type OwnershipScript, RECORD, TRACKED } from './ownership-redis-scripts.js';
import type { LearnedIds } from './types.js';

export interface RedisOwnershipStoreOptions {
  /** The connection; its owner closes it (close() here only stops this store using it). */
  readonly redis: Redis;
  /** The deployment's key prefix; this store's keys live under `<keyPrefix>a2a:`. */
  readonly keyPrefix: string;
  /** A call that takes longer fails (OwnershipStoreError), whatever the connection's own settings. Default 500. */
  readonly commandTimeoutMs?: number;
}

/** Most expired members one `tracked()` forgets; the rest wait for the next call or record. */
const TRACKED_TRIM = 1000;

/**
 * A fleet's owners in Redis (layout in ownership-redis-scripts.ts): every replica reads and
 * records the same keys, so a follow-up finds its owner wherever it lands. A record is one
 * script (check and set of every id it names); a lookup is one HMGET per id.
 * The connection is handed in, possibly with an offline queue: each call has its own timeout
 * on top, so a dead or hung Redis is an OwnershipStoreError, never a wait.
 */
export class RedisOwnershipStore implements OwnershipStore {
  readonly kind = 'redis' as const;
  readonly #redis: Redis;
  /** `<keyPrefix>a2a:`. */
  readonly #prefix: string;
  readonly #trackedKey: string;
  readonly #timeoutMs: number;
  #closed = false;

  constructor(options: RedisOwnershipStoreOptions) {
    this.#redis = options.redis;
    this.#prefix = `${options.keyPrefix}a2a:`;
    this.#trackedKey = `${this.#prefix}tracked`;
    this.#timeoutMs = options.commandTimeoutMs ?? 500;
  }

  async lookup(agent: string, kind: OwnedIdKind, id: string): Promise<IdOwner | null> {
    if (!isTrackableId(id)) return null;
    const fields = await this.#call('lookup', () => this.#redis.hmget(this.#key(member(agent, kind, id)), 'team', 'candidate'));
    return ownerOf(fields);
  }

  async lookupMany(agent: string, kind: OwnedIdKind, ids: readonly string[]): Promise<(IdOwner | null)[]> {
    const asked = ids.map((id, at) => ({ id, at })).filter(({ id }) => isTrackableId(id));
    const owners: (IdOwner | null)[] = ids.map(() => null);
    if (asked.length === 0) return owners;
    const replies = await this.#call('lookupMany', () => {
      const pipeline = this.#redis.pipeline();
      for (const { id } of asked) pipeline.hmget(this.#key(member(agent, kind, id)), 'team', 'candidate');
      return pipeline.exec();
    });
    for (const [i, { at }] of asked.entries()) {
      const [err, fields] = replies?.[i] ?? [new Error('no reply'), null];
      if (err) throw failure('lookupMany', err);
      owners[at] = ownerOf(fields as (string | null)[]);
    }
    return owners;
  }

  async record(agent: string, owner: IdOwner, ids: LearnedIds, ttl: OwnershipTtl): Promise<RecordOutcome> {
    const named: { slot: keyof RecordOutcome; member: string; ttlMs: number; terminal: '1' | '0' }[] = [];
    if (ids.taskId !== undefined && isTrackableId(ids.taskId)) {
      const terminal = ids.terminal ? '1' : '0';
      named.push({
        slot: 'task',
        member: member(agent, 'task', ids.taskId),
        ttlMs: ttlMs(ids.terminal ? ttl.terminalS : ttl.activeS),
        terminal,
      });
    }
    if (ids.contextId !== undefined && isTrackableId(ids.contextId)) {
      named.push({ slot: 'context', member: member(agent, 'context', ids.contextId), ttlMs: ttlMs(ttl.activeS), terminal: '0' });
    }
    const outcome = { task: 'none' as RecordResult, context: 'none' as RecordResult };
    if (named.length === 0) return outcome;
    const keys = [this.#trackedKey, ...named.map((n) => this.#key(n.member))];
    const args = [owner.team, owner.candidate, ...named.flatMap((n) => [n.member, n.ttlMs, n.terminal])];
    const replies = await this.#eval('record', RECORD, keys, args);
    for (const [i, n] of named.entries()) {
      const reply = Array.isArray(replies) ? replies[i] : undefined;
      if (reply !== 'recorded' && reply !== 'kept' && reply !== 'foreign') {
        throw new OwnershipStoreError('record', 'ownership store (Redis): the record script answered something else');
      }
      outcome[n.slot] = reply;
    }
    return outcome;
  }

  /**
   * The ids whose recorded expiry (Redis's clock) is still ahead, from a sorted set the records
   * keep: ZCOUNT, so bounded whatever the fleet holds. An id removed from Redis some other way
   * (eviction under maxmemory, a DEL by hand) stays counted until its recorded expiry.
   */
  async tracked(): Promise<number> {
    return Number(await this.#eval('tracked', TRACKED, [this.#trackedKey], [TRACKED_TRIM]));
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #key(member: string): string {
    return `${this.#prefix}${member}`;
  }

  async #eval(operation: OwnershipOperation, s: OwnershipScript, keys: string[], args: (string | number)[]): Promise<unknown> {
    return this.#call(operation, async () => {
      try {
        return await this.#redis.evalsha(s.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return await this.#redis.eval(s.text, keys.length, ...keys, ...args);
      }
    });
  }

  async #call<T>(operation: OwnershipOperation, command: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new OwnershipStoreError(operation, 'ownership store (Redis) is closed');
    let timer: NodeJS.Timeout | undefined;
    // The command itself may still run after the timeout (an offline queue flushing on
    // reconnect): harmless, since a record never overwrites another owner and a lookup writes nothing.
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new OwnershipStoreError(operation, `ownership store (Redis): no answer within ${this.#timeoutMs} ms`)),
        this.#timeoutMs,
      );
    });
    try {
      return await Promise.race([command(), timeout]);
    } catch (err) {
      throw failure(operation, err);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * An id's place under the prefix: the agent URI-encoded (no `:` of its own), the id as a
 * SHA-256 digest, so an upstream string of any shape (newlines, colons, glob characters)
 * makes a key of fixed length and alphabet.
 */
function member(agent: string, kind: OwnedIdKind, id: string): string {
  return `${encodeURIComponent(agent)}:${kind}:${createHash('sha256').update(id, 'utf8').digest('base64url')}`;
}

function ownerOf(fields: readonly (string | null)[] | null): IdOwner | null {
  const [team, candidate] = fields ?? [];
  return typeof team === 'string' && typeof candidate === 'string' ? { team, candidate } : null;
}

function failure(operation: OwnershipOperation, err: unknown): OwnershipStoreError {
  return err instanceof OwnershipStoreError
    ? err
    : new OwnershipStoreError(operation, `ownership store (Redis) failed: ${(err as Error).message}`, { cause: err });
}
