import { createHash, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { LimitKind, Limits, Scope } from './limits.js';
import { utcDayStamp, utcMonthStamp, WINDOW_MS } from './limits.js';
import { RESERVE_SCRIPT, SETTLE_SCRIPT, STATUS_SCRIPT } from './redis-scripts.js';
import {
  type Actual,
  DEFAULT_RESERVATION_TTL_MS,
  type GovernanceStore,
  GovernanceStoreError,
  limitNumbers,
  limitRefusal,
  type Reservation,
  type ReserveInput,
  type ReserveResult,
  rateLimitView,
  type ScopeRef,
  type ScopeStatus,
  scopeRef,
  type WindowNumbers,
} from './store.js';

export interface RedisStoreOptions {
  readonly url: string;
  /** Prefix of every key, e.g. `switchyard:`; one deployment, one prefix. */
  readonly keyPrefix: string;
  /** A command that takes longer fails as a store error (the policy then decides). Default 1000. */
  readonly commandTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly reservationTtlMs?: number;
  /** Connection events, for the log: never holds the URL's password. */
  readonly onConnectionEvent?: (event: 'ready' | 'error' | 'reconnecting', detail: string) => void;
}

/** An idle scope's counters outlive the longest month, so a month's spend is never forgotten while it runs. */
const COUNTERS_TTL_MS = 62 * 24 * 3600 * 1000;

interface Script {
  readonly text: string;
  readonly sha: string;
}

function script(text: string): Script {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
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

/** A batch of reserves goes at once when it reaches this size (far below Lua's unpack limit). */
const RESERVE_BATCH_MAX = 64;
/**
 * Reserves of one team asked for at most this far apart join one batch, decided at the
 * latest one's time: a reserve waiting for the team's batch in flight is decided when it is
 * sent, not when it was asked for. Further apart (a test's simulated clock, say), they are
 * decided in batches of their own, in order.
 */
const RESERVE_JOIN_MS = 5;

interface PendingReserve {
  readonly input: ReserveInput;
  readonly id: string;
  readonly resolve: (r: ReserveResult) => void;
  readonly reject: (err: unknown) => void;
}

/** A team's reserves waiting to be sent, all decided at one `now` (the latest asked for). */
interface ReserveBatch {
  nowMs: number;
  readonly entries: PendingReserve[];
}

interface PendingSettle {
  readonly r: Reservation;
  readonly actual: Actual;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

const RESERVE = script(RESERVE_SCRIPT);
const SETTLE = script(SETTLE_SCRIPT);
const STATUS = script(STATUS_SCRIPT);

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
  readonly #keysOf = new WeakMap<ScopeRef, readonly [string, string, string]>();
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #prefix: string;
  readonly #reservationTtlMs: number;
  readonly #tag = `${randomBytes(9).toString('base64url')}.`;
  #sequence = 0;

  constructor(options: RedisStoreOptions) {
    this.#prefix = options.keyPrefix;
    this.#reservationTtlMs = options.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
    const notify = options.onConnectionEvent ?? (() => undefined);
    this.#redis = new Redis(options.url, {
      lazyConnect: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 1000,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      // Back off to 2 s and never give up: the gateway keeps serving by its policy meanwhile.
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
      reconnectOnError: () => false,
      // Off: the store batches its own commands, and auto-pipelining would hold each batch
      // for a setImmediate of its own. Sent from a setImmediate callback, that is the next
      // turn of the event loop: a whole turn added to every reserve (issue 9's bench: the
      // reserve's round trip p50 0.41 -> 0.26 ms, req/s +7 % at c=32).
      enableAutoPipelining: false,
    });
    this.#redis.on('error', (err: Error) => notify('error', err.message));
    this.#redis.on('reconnecting', () => notify('reconnecting', 'reconnecting to Redis'));
    this.#redis.on('ready', () => {
      notify('ready', 'connected to Redis');
      for (const s of [RESERVE, SETTLE, STATUS]) this.#redis.script('LOAD', s.text).catch(() => undefined);
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

  #base(s: ScopeRef): string {
    const who = s.kind === 'team' ? 't' : `k:${s.id}`;
    return `${this.#prefix}{${s.team}}:${who}`;
  }

  /** log, counters, resv (see redis-scripts.ts). */
  #scopeKeys(s: ScopeRef): readonly [string, string, string] {
    let keys = this.#keysOf.get(s);
    if (keys === undefined) {
      const b = this.#base(s);
      keys = [`${b}:log`, `${b}:counters`, `${b}:resv`];
      this.#keysOf.set(s, keys);
    }
    return keys;
  }

  /**
   * The scope's number (1-based) among a batch's distinct scopes, its three keys added to
   * `keys` the first time. Distinct by key, not by object: two generations' scope objects
   * of one team share counters.
   */
  #numberOf(s: ScopeRef, keys: string[], numbers: Map<string, number>): number {
    const scopeKeys = this.#scopeKeys(s);
    let n = numbers.get(scopeKeys[0]);
    if (n === undefined) {
      n = numbers.size + 1;
      numbers.set(scopeKeys[0], n);
      keys.push(scopeKeys[0], scopeKeys[1], scopeKeys[2]);
    }
    return n;
  }

  async #eval(s: Script, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      try {
        return await this.#redis.evalsha(s.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return await this.#redis.eval(s.text, keys.length, ...keys, ...args);
      }
    } catch (err) {
      throw new GovernanceStoreError(`governance store (Redis) failed: ${(err as Error).message}`, { cause: err });
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
    const keys: string[] = [];
    const keyNumbers = new Map<string, number>();
    const limitNumbersOf = new Map<Limits, number>();
    const limitArgs: Array<string | number> = [];
    const reserveArgs: Array<string | number> = [entries.length];
    for (const { input, id } of entries) {
      reserveArgs.push(id, input.tokens, input.costMicroUsd, input.scopes.length);
      for (const s of input.scopes) {
        const k = this.#numberOf(s, keys, keyNumbers);
        let l = limitNumbersOf.get(s.limits);
        if (l === undefined) {
          l = limitNumbersOf.size + 1;
          limitNumbersOf.set(s.limits, l);
          for (const v of limitNumbers(s.limits)) limitArgs.push(v);
        }
        reserveArgs.push(k, l);
      }
    }
    const month = utcMonthStamp(nowMs);
    const day = utcDayStamp(nowMs);
    const args: Array<string | number> = [nowMs, WINDOW_MS, COUNTERS_TTL_MS, month, day, this.#reservationTtlMs, limitNumbersOf.size];
    for (const v of limitArgs) args.push(v);
    for (const v of reserveArgs) args.push(v);
    this.#eval(RESERVE, keys, args).then(
      (out) => {
        const flat = out as Array<number | string>;
        let at = 0;
        for (const e of entries) {
          e.resolve(reserved(e, flat, at, nowMs, day, month));
          at += 4 + 4 * e.input.scopes.length;
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
    const keys: string[] = [];
    const keyNumbers = new Map<string, number>();
    const args: Array<string | number> = [batch.length];
    for (const { r, actual } of batch) {
      args.push(r.id, r.tokens, actual.tokens, actual.costMicroUsd, r.costMicroUsd, r.month, r.day, r.atMs, r.scopes.length);
      for (const s of r.scopes) args.push(this.#numberOf(s, keys, keyNumbers));
    }
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
    const month = utcMonthStamp(nowMs);
    const keys = scopes.flatMap((s) => this.#scopeKeys(s));
    const out = ((await this.#eval(STATUS, keys, [nowMs, WINDOW_MS, month, utcDayStamp(nowMs), scopes.length])) as number[]).map(Number);
    return scopes.map((s, i) => {
      const [requests, tokens, today, spent, reserved] = out.slice(i * 5, i * 5 + 5) as [number, number, number, number, number];
      return {
        kind: s.kind,
        id: s.id,
        requestsThisMinute: { used: requests, limit: s.limits.rpm ?? null },
        tokensThisMinute: { used: tokens, limit: s.limits.tpm ?? null },
        tokensToday: { used: today, limit: s.limits.tokensPerDay ?? null },
        spendThisMonthMicroUsd: { used: spent, reservedMicroUsd: reserved, limit: s.limits.budgetMicroUsdPerMonth ?? null },
      };
    });
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

/**
 * One reservation's answer from the batch script, at `at` in its reply: {1, warnMask, 0, 0}
 * or {0, scope, limit, retryMs}, then its windows. `nowMs` is the batch's: when it was decided.
 */
function reserved(
  e: PendingReserve,
  out: ReadonlyArray<number | string>,
  at: number,
  nowMs: number,
  day: string,
  month: string,
): ReserveResult {
  const { scopes, tokens, costMicroUsd } = e.input;
  const windows = windowsOf(out, at + 4, scopes.length);
  if (out[at] === 1) {
    const warnMask = Number(out[at + 1]);
    // The generation's scope objects are the reservation's: settle finds their keys built already.
    const reservation: Reservation = { id: e.id, scopes, atMs: nowMs, tokens, costMicroUsd, day, month, enforced: true };
    const budgetWarnings = warnMask === 0 ? NO_WARNINGS : scopes.filter((_, i) => (warnMask & (1 << i)) !== 0).map(scopeRef);
    return { ok: true, reservation, rateLimit: rateLimitView(scopes, windows, nowMs), budgetWarnings };
  }
  const scope = scopes[Number(out[at + 1]) - 1] as Scope;
  return {
    ok: false,
    refusal: limitRefusal(scope, out[at + 2] as LimitKind, Number(out[at + 3]), nowMs, rateLimitView(scopes, windows, nowMs)),
  };
}

const NO_WARNINGS: readonly ScopeRef[] = Object.freeze([]);

/** `n` scopes' windows from a script's reply, from `at` on: requests, oldestRequestAt, tokens, oldestTokensAt (-1 = none). */
function windowsOf(flat: ReadonlyArray<number | string>, at: number, n: number): WindowNumbers[] {
  const out: WindowNumbers[] = [];
  for (let i = at; i < at + 4 * n; i += 4) {
    const oldestReq = Number(flat[i + 1]);
    const oldestTok = Number(flat[i + 3]);
    out.push({
      requests: Number(flat[i]),
      oldestRequestAt: oldestReq < 0 ? null : oldestReq,
      tokens: Number(flat[i + 2]),
      oldestTokensAt: oldestTok < 0 ? null : oldestTok,
    });
  }
  return out;
}
