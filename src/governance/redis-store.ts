import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { redisConnection } from '../redis/index.js';
import type { Scope } from './limits.js';
import {
  decodeReserves,
  decodeStatus,
  encodeReserves,
  encodeSettles,
  encodeStatus,
  type ReserveEntry,
  type ScopeKeys,
  type ScriptClock,
  type SettleEntry,
  scopeKeys,
} from './redis-encoding.js';
import { RESERVE, type Script, SETTLE, STATUS } from './redis-scripts.js';
import {
  type Actual,
  DEFAULT_RESERVATION_TTL_MS,
  type GovernanceStore,
  GovernanceStoreError,
  type Reservation,
  type ReserveInput,
  type ReserveResult,
  type ScopeRef,
  type ScopeStatus,
} from './store.js';

/** TLS for a rediss:// URL: PEM text (not paths); absent parts are the system's CAs and no client certificate. */
export interface RedisTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  /** The name the server's certificate must carry (SNI and verification); default the URL's host. */
  readonly serverName?: string;
}

export interface RedisStoreOptions {
  /** redis:// or rediss:// (TLS). A user or password in it is used only when `username` / `password` are absent. */
  readonly url: string;
  /** AUTH's user (an ACL user, Redis 6+); absent = the URL's, else the default user. */
  readonly username?: string;
  /** AUTH's password; never passed to a log or an error message. */
  readonly password?: string;
  /** For a rediss:// URL; a rediss:// URL without it verifies against the system's CAs. */
  readonly tls?: RedisTls;
  /** Prefix of every key, e.g. `switchyard:`; one deployment, one prefix. */
  readonly keyPrefix: string;
  /** A command that takes longer fails as a store error (the policy then decides). Default 1000. */
  readonly commandTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly reservationTtlMs?: number;
  /**
   * Whose clock the windows, days and months follow: Redis's (`TIME`, read inside each
   * script; the default, and the only one a fleet should use, since every replica then reads
   * one clock), or the `nowMs` each call passes (tests that simulate time).
   */
  readonly clock?: 'redis' | 'caller';
  /** Connection events, for the log: never holds the URL's password. */
  readonly onConnectionEvent?: (event: 'ready' | 'error' | 'reconnecting', detail: string) => void;
}

/**
 * A settle waits at most this long for others to share its round trip. Redis's cost of a
 * script call is mostly fixed (reading and writing each scope's counters, about 100 µs on
 * the bench machine) and a settle is after the response, which nothing but the request's
 * own record waits for: 10 ms gathers five times as many as 2 ms did, and the reservation
 * holds the worst case meanwhile, so no limit is overshot.
 */
const SETTLE_BATCH_MS = 10;
/** …and a batch this large goes at once (it stays far below Lua's unpack limit). */
const SETTLE_BATCH_MAX = 64;

/** What any failed Redis call is to the store's policy: a store error, with Redis's reason. */
function storeError(err: unknown): GovernanceStoreError {
  return new GovernanceStoreError(`governance store (Redis) failed: ${(err as Error).message}`, { cause: err });
}

const REDIS_CLOCK: ScriptClock = Object.freeze({ kind: 'redis' });

/** A batch of reserves goes at once when it reaches this size (far below Lua's unpack limit). */
const RESERVE_BATCH_MAX = 64;
/**
 * Reserves of one team asked for at most this far apart join one batch, decided at one time:
 * Redis's when the script runs, or (on the caller's clock) the latest one asked for. A
 * reserve waiting for the team's batch in flight is decided when it is sent, not when it was
 * asked for. Further apart (a test's simulated clock, say), they are decided in batches of
 * their own, in order.
 */
const RESERVE_JOIN_MS = 5;

interface PendingReserve extends ReserveEntry {
  readonly resolve: (r: ReserveResult) => void;
  readonly reject: (err: unknown) => void;
}

/** A team's reserves waiting to be sent, all decided at one time (`nowMs` is the latest asked for). */
interface ReserveBatch {
  nowMs: number;
  readonly entries: PendingReserve[];
}

interface PendingSettle extends SettleEntry {
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Counters in Redis, shared by every replica: each reserve, settle and status is one Lua
 * script, called by SHA (loaded on every connect) with a NOSCRIPT fallback to EVAL. A down
 * Redis fails fast: no offline queue, no per-command retries, a command timeout; the client
 * reconnects by itself in the background.
 */
export class RedisGovernanceStore implements GovernanceStore {
  readonly #redis: Redis;
  /** Settles waiting to be sent, by team. */
  readonly #pending = new Map<string, PendingSettle[]>();
  #flushTimer: NodeJS.Timeout | null = null;
  /** Reserves waiting to be sent, by team. */
  readonly #reserving = new Map<string, ReserveBatch>();
  /** Reserve batches sent and not yet answered, by team. */
  readonly #reservesInFlight = new Map<string, number>();
  #reserveFlush: NodeJS.Immediate | null = null;
  /** Each scope's three keys, built once per scope object. */
  readonly #keysCache = new WeakMap<ScopeRef, ScopeKeys>();
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #prefix: string;
  readonly #reservationTtlMs: number;
  readonly #commandTimeoutMs: number;
  readonly #callerClock: boolean;
  /**
   * Redis's clock minus this process's monotonic clock (performance.now()), as last seen: a
   * reply's Redis time less the time it arrived, which is never later than the truth (the
   * script ran before its reply came back). A reserve's deadline built with it is therefore
   * never later than the moment the command times out here. Null until the first sample.
   */
  #redisOffsetMs: number | null = null;
  readonly #tag = `${randomBytes(9).toString('base64url')}.`;
  #sequence = 0;

  constructor(options: RedisStoreOptions) {
    this.#prefix = options.keyPrefix;
    this.#reservationTtlMs = options.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
    this.#commandTimeoutMs = options.commandTimeoutMs ?? 1000;
    this.#callerClock = options.clock === 'caller';
    const notify = options.onConnectionEvent ?? (() => undefined);
    const { href, options: connection } = redisConnection(options);
    this.#redis = new Redis(href, {
      // A rediss:// URL alone turns TLS on with the system's CAs; `tls` replaces that default.
      ...connection,
      lazyConnect: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: this.#commandTimeoutMs,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      // Back off to 2 s and never give up: the gateway keeps serving by its policy meanwhile.
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
      reconnectOnError: () => false,
      // Off: the store batches its own commands, and auto-pipelining would hold each batch
      // for a setImmediate of its own. Sent from a setImmediate callback, that is the next
      // turn of the event loop: a whole turn added to every reserve (ADR-0020; on the
      // governance-overhead bench the reserve's round trip p50 0.41 -> 0.26 ms, req/s +7 % at c=32).
      enableAutoPipelining: false,
    });
    this.#redis.on('error', (err: Error) => notify('error', err.message));
    this.#redis.on('reconnecting', () => notify('reconnecting', 'reconnecting to Redis'));
    this.#redis.on('ready', () => {
      notify('ready', 'connected to Redis');
      for (const s of [RESERVE, SETTLE, STATUS]) this.#redis.script('LOAD', s.text).catch(() => undefined);
      // Redis's clock, before the first reserve needs a deadline in it.
      this.#redis.time().then(
        ([seconds, micros]) => this.#sampleRedisClock(Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)),
        () => undefined,
      );
    });
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

  #sampleRedisClock(redisNowMs: number): void {
    this.#redisOffsetMs = redisNowMs - performance.now();
  }

  /**
   * Redis's time after which a reserve sent now must not take effect: when this client will
   * have given up on it (the command timeout). -1 before Redis's clock was first read.
   */
  #deadline(): number {
    const offset = this.#redisOffsetMs;
    return offset === null ? -1 : Math.floor(performance.now() + this.#commandTimeoutMs + offset);
  }

  #clock(nowMs: number): ScriptClock {
    return this.#callerClock ? { kind: 'caller', nowMs } : REDIS_CLOCK;
  }

  /** The encoder's key lookup, bound once: the cache above, filled by scopeKeys. */
  readonly #keysOf = (s: ScopeRef): ScopeKeys => {
    let keys = this.#keysCache.get(s);
    if (keys === undefined) {
      keys = scopeKeys(this.#prefix, s);
      this.#keysCache.set(s, keys);
    }
    return keys;
  };

  async #eval(s: Script, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      try {
        return await this.#redis.evalsha(s.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return await this.#redis.eval(s.text, keys.length, ...keys, ...args);
      }
    } catch (err) {
      throw storeError(err);
    }
  }

  /**
   * A reservation's id: this store's random tag and a sequence number. Unique across
   * replicas and restarts (72 random bits per store), and a third of a UUID's length, which
   * every member of the log and the reservations spells out.
   */
  #nextId(): string {
    this.#sequence += 1;
    return this.#tag + this.#sequence.toString(36);
  }

  /**
   * Queued with the other reserves of its team and sent as one script (one round trip;
   * each scope's counters read and written once per batch), as a group commit: when none of
   * the team's batches is in flight, right after this turn's I/O callbacks (at rest a batch
   * of one waits for nothing but that turn's end); otherwise when the one in flight is
   * answered, with everything that arrived meanwhile. Under load a batch then holds what
   * arrives during one round trip, so Redis's work per request falls as the load rises.
   */
  reserve(input: ReserveInput): Promise<ReserveResult> {
    const team = input.scopes[0]?.team ?? '';
    return new Promise((resolve, reject) => {
      let batch = this.#reserving.get(team);
      if (batch !== undefined && Math.abs(input.nowMs - batch.nowMs) > RESERVE_JOIN_MS) {
        this.#sendReserves(team, batch);
        batch = undefined;
      }
      if (batch === undefined) {
        batch = { nowMs: input.nowMs, entries: [] };
        this.#reserving.set(team, batch);
      } else if (input.nowMs > batch.nowMs) batch.nowMs = input.nowMs;
      batch.entries.push({ input, id: this.#nextId(), resolve, reject });
      if (batch.entries.length >= RESERVE_BATCH_MAX) this.#sendReserves(team, batch);
      else if (!this.#reservesInFlight.has(team)) this.#reserveFlush ??= setImmediate(this.#flushReserves);
    });
  }

  /** Sends every team's waiting batch, or, with `onlyIdle`, those of teams with none in flight. */
  #sendWaiting(onlyIdle: boolean): void {
    for (const [team, batch] of this.#reserving) if (!onlyIdle || !this.#reservesInFlight.has(team)) this.#sendReserves(team, batch);
  }

  readonly #flushReserves = (): void => {
    this.#reserveFlush = null;
    this.#sendWaiting(true);
  };

  /** A batch of `team` was answered: what waited for it goes now. */
  #reservesAnswered(team: string): void {
    const left = (this.#reservesInFlight.get(team) ?? 1) - 1;
    if (left > 0) {
      this.#reservesInFlight.set(team, left);
      return;
    }
    this.#reservesInFlight.delete(team);
    const waiting = this.#reserving.get(team);
    if (waiting !== undefined) this.#sendReserves(team, waiting);
  }

  #sendReserves(team: string, batch: ReserveBatch): void {
    if (this.#reserving.get(team) === batch) this.#reserving.delete(team);
    this.#reservesInFlight.set(team, (this.#reservesInFlight.get(team) ?? 0) + 1);
    const { nowMs, entries } = batch;
    const { keys, args } = encodeReserves(this.#clock(nowMs), this.#deadline(), entries, this.#reservationTtlMs, this.#keysOf);
    this.#eval(RESERVE, keys, args).then(
      (out) => {
        const reply = decodeReserves(out, entries);
        this.#sampleRedisClock(reply.redisNowMs);
        if (reply.expired) {
          // Redis ran it after this client's timeout would have fired; it wrote nothing.
          const err = new GovernanceStoreError('governance store (Redis) ran the reserve after its deadline; nothing was reserved');
          for (const e of entries) e.reject(err);
        } else {
          let i = 0;
          for (const e of entries) e.resolve(reply.results[i++] as ReserveResult);
        }
        this.#reservesAnswered(team);
      },
      (err: unknown) => {
        for (const e of entries) e.reject(err);
        this.#reservesAnswered(team);
      },
    );
  }

  /**
   * Queued and sent with the others of its team a few milliseconds later, as one script
   * (one round trip, each scope's counters read and written once): the client already has
   * its response, and half the store's commands are settles. Resolves once Redis has it.
   */
  settle(r: Reservation, actual: Actual, _nowMs: number): Promise<void> {
    const team = r.scopes[0]?.team ?? '';
    return new Promise((resolve, reject) => {
      let batch = this.#pending.get(team);
      if (batch === undefined) {
        batch = [];
        this.#pending.set(team, batch);
      }
      batch.push({ r, actual, resolve, reject });
      if (batch.length >= SETTLE_BATCH_MAX) this.#flushTeam(team);
      else this.#flushTimer ??= setTimeout(() => this.#flush(), SETTLE_BATCH_MS);
    });
  }

  #flush(): void {
    this.#flushTimer = null;
    for (const team of [...this.#pending.keys()]) this.#flushTeam(team);
  }

  /** One script per team: a team's keys share a hash slot, so the batch is valid on a Cluster too. */
  #flushTeam(team: string): void {
    const batch = this.#pending.get(team);
    if (batch === undefined || batch.length === 0) return;
    this.#pending.delete(team);
    const { keys, args } = encodeSettles(batch, this.#keysOf);
    const sent = this.#eval(SETTLE, keys, args);
    this.#inFlight.add(sent);
    sent
      .then(
        () => {
          for (const b of batch) b.resolve();
        },
        (err: unknown) => {
          for (const b of batch) b.reject(err);
        },
      )
      .finally(() => this.#inFlight.delete(sent));
  }

  release(r: Reservation, nowMs: number): Promise<void> {
    return this.settle(r, { tokens: 0, costMicroUsd: 0 }, nowMs);
  }

  async status(scopes: readonly Scope[], nowMs: number): Promise<ScopeStatus[]> {
    if (scopes.length === 0) return [];
    const { keys, args } = encodeStatus(scopes, this.#clock(nowMs), this.#keysOf);
    return decodeStatus(await this.#eval(STATUS, keys, args), scopes);
  }

  /** Under `<prefix>record:<key>`, each with its own time to live. */
  readonly records: NonNullable<GovernanceStore['records']> = {
    get: (key) => this.#command(() => this.#redis.get(`${this.#prefix}record:${key}`)),
    set: (key, value, ttlMs) =>
      this.#command(async () => void (await this.#redis.set(`${this.#prefix}record:${key}`, value, 'PX', Math.max(1, Math.round(ttlMs))))),
    delete: (key) => this.#command(async () => void (await this.#redis.del(`${this.#prefix}record:${key}`))),
  };

  async #command<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      throw storeError(err);
    }
  }

  async close(): Promise<void> {
    // Reserves and settles still queued go out before the connection closes (a graceful stop loses none).
    if (this.#reserveFlush !== null) clearImmediate(this.#reserveFlush);
    this.#reserveFlush = null;
    this.#sendWaiting(false);
    if (this.#flushTimer !== null) clearTimeout(this.#flushTimer);
    this.#flush();
    await Promise.allSettled([...this.#inFlight]);
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }
}
