import type { RateLimitView, Scope } from './limits.js';
import { utcDayStamp, utcMonthStamp, WINDOW_MS } from './limits.js';
import {
  type Actual,
  DEFAULT_RESERVATION_TTL_MS,
  type GovernanceStore,
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

interface MonthCounters {
  spent: number;
  readonly open: OpenReservations;
}

/**
 * One month's open reservations, in the order they were made, which is their expiry order
 * (one TTL, time moving forward). Parallel arrays of numbers, not a Map of entries: a
 * long-lived table that every request writes a new object into keeps the young
 * generation's collector busy (the same lesson as server/open-exchanges.ts). Settling
 * marks an entry; settled and expired entries leave from the head, and the arrays are
 * compacted when the dead entries outnumber the live ones.
 */
class OpenReservations {
  #seqs: number[] = [];
  /** Cost in micro-USD; -1 once settled. */
  #costs: number[] = [];
  #expiresAt: number[] = [];
  #head = 0;
  #live = 0;
  /** Sum of the open reservations' costs. */
  reserved = 0;

  get size(): number {
    return this.#live;
  }

  /** Appends a reservation; `seq` grows with every call. */
  add(seq: number, costMicroUsd: number, expiresAtMs: number): void {
    this.#seqs.push(seq);
    this.#costs.push(costMicroUsd);
    this.#expiresAt.push(expiresAtMs);
    this.#live += 1;
    this.reserved += costMicroUsd;
  }

  /** Closes reservation `seq`; false when it is not open (already closed, or expired). */
  close(seq: number): boolean {
    const seqs = this.#seqs;
    let lo = this.#head;
    let hi = seqs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = seqs[mid] as number;
      if (v < seq) lo = mid + 1;
      else if (v > seq) hi = mid - 1;
      else {
        const cost = this.#costs[mid] as number;
        if (cost < 0) return false;
        this.#costs[mid] = -1;
        this.#live -= 1;
        this.reserved -= cost;
        this.#trim(Number.NEGATIVE_INFINITY);
        return true;
      }
    }
    return false;
  }

  /** Drops the reservations that expired by `nowMs` (a crashed caller's), giving their cost back. */
  purge(nowMs: number): void {
    this.#trim(nowMs);
  }

  #trim(nowMs: number): void {
    const costs = this.#costs;
    const expires = this.#expiresAt;
    let head = this.#head;
    while (head < costs.length) {
      const cost = costs[head] as number;
      if (cost >= 0) {
        if ((expires[head] as number) > nowMs) break;
        this.#live -= 1;
        this.reserved -= cost;
      }
      head += 1;
    }
    this.#head = head;
    const span = costs.length - head;
    if ((head > 1024 && head * 2 > costs.length) || (span > 1024 && this.#live * 2 < span)) this.#compact();
  }

  #compact(): void {
    const seqs: number[] = [];
    const costs: number[] = [];
    const expires: number[] = [];
    for (let i = this.#head; i < this.#costs.length; i += 1) {
      if ((this.#costs[i] as number) < 0) continue;
      seqs.push(this.#seqs[i] as number);
      costs.push(this.#costs[i] as number);
      expires.push(this.#expiresAt[i] as number);
    }
    this.#seqs = seqs;
    this.#costs = costs;
    this.#expiresAt = expires;
    this.#head = 0;
  }
}

/**
 * One scope's sliding window: requests and tokens per millisecond, oldest first, over
 * parallel arrays with a moving head. Times are whole milliseconds, so merging the
 * reservations of one millisecond loses nothing: the window stays exact (a sliding log)
 * while the log holds at most one entry per busy millisecond instead of one per request.
 * Dropping expired entries is O(dropped); the arrays are compacted only when the dead
 * prefix outgrows the live part (amortised O(1)).
 */
class WindowLog {
  #at: number[] = [];
  #requests: number[] = [];
  #tokens: number[] = [];
  #head = 0;
  requestSum = 0;
  tokenSum = 0;

  get empty(): boolean {
    return this.#head === this.#at.length;
  }

  /** Epoch ms of the oldest entry in the window, or null. */
  oldestAt(): number | null {
    return this.empty ? null : (this.#at[this.#head] as number);
  }

  add(atMs: number, tokens: number): void {
    this.requestSum += 1;
    this.tokenSum += tokens;
    const at = this.#at;
    let i = at.length;
    // Real time appends at the end or merges into the last millisecond; an injected clock
    // may step back in tests, so the log stays sorted either way.
    while (i > this.#head && (at[i - 1] as number) > atMs) i -= 1;
    if (i > this.#head && at[i - 1] === atMs) {
      (this.#requests[i - 1] as number) += 1;
      (this.#tokens[i - 1] as number) += tokens;
    } else if (i === at.length) {
      at.push(atMs);
      this.#requests.push(1);
      this.#tokens.push(tokens);
    } else {
      at.splice(i, 0, atMs);
      this.#requests.splice(i, 0, 1);
      this.#tokens.splice(i, 0, tokens);
    }
  }

  /** Corrects the tokens booked at `atMs` (a settle's true-up); nothing once that entry has expired. */
  adjustTokens(atMs: number, delta: number): void {
    const i = this.#find(atMs);
    if (i < 0) return;
    const before = this.#tokens[i] as number;
    const after = Math.max(0, before + delta);
    this.#tokens[i] = after;
    this.tokenSum += after - before;
  }

  /** Drops entries at or before `edge`. */
  dropUntil(edge: number): void {
    const at = this.#at;
    let head = this.#head;
    while (head < at.length && (at[head] as number) <= edge) {
      this.requestSum -= this.#requests[head] as number;
      this.tokenSum -= this.#tokens[head] as number;
      head += 1;
    }
    this.#head = head;
    if (head > 1024 && head * 2 > at.length) {
      this.#at = at.slice(head);
      this.#requests = this.#requests.slice(head);
      this.#tokens = this.#tokens.slice(head);
      this.#head = 0;
    }
  }

  /**
   * Milliseconds from `nowMs` until `need` more units fit under `limit`, as the oldest
   * entries leave the window (`units` picks requests or tokens).
   */
  freesIn(units: 'requests' | 'tokens', need: number, limit: number, nowMs: number): number {
    if (need > limit) return WINDOW_MS;
    const counts = units === 'requests' ? this.#requests : this.#tokens;
    let left = (units === 'requests' ? this.requestSum : this.tokenSum) + need;
    for (let i = this.#head; i < this.#at.length; i += 1) {
      left -= counts[i] as number;
      if (left <= limit) return (this.#at[i] as number) + WINDOW_MS - nowMs;
    }
    return WINDOW_MS;
  }

  #find(atMs: number): number {
    let lo = this.#head;
    let hi = this.#at.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.#at[mid] as number;
      if (v === atMs) return mid;
      if (v < atMs) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

/** One scope's counters. The window holds only the last 60 s, so it stays as small as the traffic. */
class ScopeCounters {
  readonly window = new WindowLog();
  /** The current UTC day's tokens; an earlier day no longer limits anything. */
  dayStamp = '';
  dayTokens = 0;
  readonly months = new Map<string, MonthCounters>();

  purge(nowMs: number, month: string): void {
    this.window.dropUntil(nowMs - WINDOW_MS);
    this.months.get(month)?.open.purge(nowMs);
  }

  tokensOn(day: string): number {
    return this.dayStamp === day ? this.dayTokens : 0;
  }

  addTokens(day: string, tokens: number): void {
    if (this.dayStamp !== day) {
      // A late settle for a day that has ended changes nothing that still limits.
      if (day < this.dayStamp) return;
      this.dayStamp = day;
      this.dayTokens = 0;
    }
    this.dayTokens = Math.max(0, this.dayTokens + tokens);
  }

  month(stamp: string): MonthCounters {
    let m = this.months.get(stamp);
    if (m === undefined) {
      m = { spent: 0, open: new OpenReservations() };
      this.months.set(stamp, m);
      // Keep this month and the last (for late settles); older months are history.
      for (const key of this.months.keys()) if (key < stamp && this.months.size > 2) this.months.delete(key);
    }
    return m;
  }

  windows(): WindowNumbers {
    const oldest = this.window.oldestAt();
    return { requests: this.window.requestSum, oldestRequestAt: oldest, tokens: this.window.tokenSum, oldestTokensAt: oldest };
  }
}

/** The x-ratelimit-* view of the scopes' windows as they are now. */
function viewOf(scopes: readonly Scope[], counters: readonly ScopeCounters[], nowMs: number): RateLimitView {
  const windows: WindowNumbers[] = [];
  for (const c of counters) windows.push(c.windows());
  return rateLimitView(scopes, windows, nowMs);
}

/** `n`, or 0 when it is negative or not a number. */
function atLeastZero(n: number): number {
  return Number.isNaN(n) ? 0 : Math.max(0, n);
}

/**
 * The embedded store: exact on one replica. Its decision is the Lua script's, in the same
 * order (scopes in order; RPM, TPM, day, budget), and it is atomic because it never awaits.
 */
export class MemoryGovernanceStore implements GovernanceStore {
  /** Counters by team and id: a reload's new limits find the same counters (ADR 0009). */
  readonly #scopes = new Map<string, ScopeCounters>();
  /**
   * The same counters by the generation's scope object, so the request path skips building
   * the string key; a new generation's scopes miss here once and find them by name.
   */
  readonly #byScope = new WeakMap<ScopeRef, ScopeCounters>();
  readonly #reservationTtlMs: number;
  #sequence = 0;

  constructor(options: { reservationTtlMs?: number } = {}) {
    this.#reservationTtlMs = options.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
  }

  #counters(s: ScopeRef): ScopeCounters {
    let c = this.#byScope.get(s);
    if (c !== undefined) return c;
    const key = `${s.kind}\u0000${s.team}\u0000${s.id}`;
    c = this.#scopes.get(key);
    if (c === undefined) {
      c = new ScopeCounters();
      this.#scopes.set(key, c);
    }
    this.#byScope.set(s, c);
    return c;
  }

  reserve(input: ReserveInput): ReserveResult {
    const { scopes, tokens, costMicroUsd, nowMs } = input;
    const day = utcDayStamp(nowMs);
    const month = utcMonthStamp(nowMs);
    const counters: ScopeCounters[] = [];
    for (const s of scopes) {
      const c = this.#counters(s);
      c.purge(nowMs, month);
      counters.push(c);
    }
    let warnings: ScopeRef[] | null = null;
    for (let i = 0; i < scopes.length; i += 1) {
      const s = scopes[i] as Scope;
      const c = counters[i] as ScopeCounters;
      const { rpm, tpm, tokensPerDay, budgetMicroUsdPerMonth } = s.limits;
      if (rpm !== undefined && c.window.requestSum + 1 > rpm) {
        const frees = c.window.freesIn('requests', 1, rpm, nowMs);
        return { ok: false, refusal: limitRefusal(s, 'rpm', frees, nowMs, viewOf(scopes, counters, nowMs)) };
      }
      if (tpm !== undefined && c.window.tokenSum + tokens > tpm) {
        const frees = c.window.freesIn('tokens', tokens, tpm, nowMs);
        return { ok: false, refusal: limitRefusal(s, 'tpm', frees, nowMs, viewOf(scopes, counters, nowMs)) };
      }
      if (tokensPerDay !== undefined && c.tokensOn(day) + tokens > tokensPerDay) {
        return { ok: false, refusal: limitRefusal(s, 'tokens_per_day', 0, nowMs, viewOf(scopes, counters, nowMs)) };
      }
      if (budgetMicroUsdPerMonth !== undefined) {
        const m = c.months.get(month);
        const taken = (m?.spent ?? 0) + (m?.open.reserved ?? 0);
        if (taken + costMicroUsd > budgetMicroUsdPerMonth) {
          if (s.limits.budgetOnExceeded === 'warn') (warnings ??= []).push(scopeRef(s));
          else {
            const left = budgetMicroUsdPerMonth - taken;
            return { ok: false, refusal: limitRefusal(s, 'budget', 0, nowMs, viewOf(scopes, counters, nowMs), left) };
          }
        }
      }
    }
    this.#sequence += 1;
    const seq = this.#sequence;
    const id = `m${seq}`;
    const expiresAt = nowMs + this.#reservationTtlMs;
    for (let i = 0; i < counters.length; i += 1) {
      const c = counters[i] as ScopeCounters;
      c.window.add(nowMs, tokens);
      c.addTokens(day, tokens);
      // Only a budget reads reservations: a scope without one books spend, not reservations.
      if ((scopes[i] as Scope).limits.budgetMicroUsdPerMonth === undefined) continue;
      const m = c.month(month);
      m.open.add(seq, costMicroUsd, expiresAt);
    }
    // The generation's scope objects are the reservation's scopes: settle finds their
    // counters without a key (they carry limits too, which nothing downstream reads).
    const reservation: Reservation = { id, scopes, atMs: nowMs, tokens, costMicroUsd, day, month, enforced: true };
    return { ok: true, reservation, rateLimit: viewOf(scopes, counters, nowMs), budgetWarnings: warnings ?? [] };
  }

  settle(r: Reservation, actual: Actual, _nowMs: number): void {
    // A negative actual would be a refund: it would take from the counters what other
    // requests booked. Counted as zero (as the redis store does), whatever the caller passed.
    const tokens = atLeastZero(actual.tokens);
    const cost = atLeastZero(actual.costMicroUsd);
    const seq = Number(r.id.slice(1));
    for (const s of r.scopes) {
      const c = this.#counters(s);
      c.window.adjustTokens(r.atMs, tokens - r.tokens);
      c.addTokens(r.day, tokens - r.tokens);
      const m = c.month(r.month);
      m.open.close(seq);
      m.spent += cost;
    }
  }

  release(r: Reservation, nowMs: number): void {
    this.settle(r, { tokens: 0, costMicroUsd: 0 }, nowMs);
  }

  async status(scopes: readonly Scope[], nowMs: number): Promise<ScopeStatus[]> {
    const day = utcDayStamp(nowMs);
    const month = utcMonthStamp(nowMs);
    return scopes.map((s) => {
      const c = this.#counters(s);
      c.purge(nowMs, month);
      const m = c.months.get(month);
      return {
        kind: s.kind,
        id: s.id,
        requestsThisMinute: { used: c.window.requestSum, limit: s.limits.rpm ?? null },
        tokensThisMinute: { used: c.window.tokenSum, limit: s.limits.tpm ?? null },
        tokensToday: { used: c.tokensOn(day), limit: s.limits.tokensPerDay ?? null },
        spendThisMonthMicroUsd: {
          used: m?.spent ?? 0,
          reservedMicroUsd: m?.open.reserved ?? 0,
          limit: s.limits.budgetMicroUsdPerMonth ?? null,
        },
      };
    });
  }

  async close(): Promise<void> {}
}
