import { randomUUID } from 'node:crypto';
import type { Scope } from './limits.js';
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

interface TokenEntry {
  readonly id: string;
  readonly at: number;
  tokens: number;
}

interface MonthCounters {
  spent: number;
  reserved: number;
  /** reservation id -> [costMicroUsd, expiresAtMs] */
  readonly open: Map<string, [number, number]>;
}

/**
 * A time-ordered log with a moving head: dropping expired entries is O(dropped), and the
 * array is compacted only when the dead prefix outgrows the live part (amortised O(1)).
 */
class TimeLog<T> {
  #items: T[] = [];
  #head = 0;
  readonly #at: (x: T) => number;

  constructor(at: (x: T) => number) {
    this.#at = at;
  }

  get size(): number {
    return this.#items.length - this.#head;
  }

  first(): T | undefined {
    return this.#items[this.#head];
  }

  /** The i-th live entry, oldest first. */
  get(i: number): T | undefined {
    return this.#items[this.#head + i];
  }

  /** Appends in time order; an injected clock may step back in tests, real time appends at the end. */
  insert(item: T): void {
    let i = this.#items.length;
    while (i > this.#head && this.#at(this.#items[i - 1] as T) > this.#at(item)) i -= 1;
    if (i === this.#items.length) this.#items.push(item);
    else this.#items.splice(i, 0, item);
  }

  /** Drops entries at or before `edge`, calling `onDrop` for each. */
  dropUntil(edge: number, onDrop?: (x: T) => void): void {
    while (this.#head < this.#items.length && this.#at(this.#items[this.#head] as T) <= edge) {
      onDrop?.(this.#items[this.#head] as T);
      this.#head += 1;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = this.#head; i < this.#items.length; i += 1) yield this.#items[i] as T;
  }
}

/** One scope's counters. The logs hold only the last 60 s, so they stay as small as the traffic. */
class ScopeCounters {
  /** Request times. */
  readonly requests = new TimeLog<number>((x) => x);
  readonly tokenLog = new TimeLog<TokenEntry>((x) => x.at);
  tokenSum = 0;
  readonly tokenById = new Map<string, TokenEntry>();
  readonly days = new Map<string, number>();
  readonly months = new Map<string, MonthCounters>();

  purge(nowMs: number, month: string): void {
    const edge = nowMs - WINDOW_MS;
    this.requests.dropUntil(edge);
    this.tokenLog.dropUntil(edge, (e) => {
      this.tokenSum -= e.tokens;
      this.tokenById.delete(e.id);
    });
    const m = this.months.get(month);
    if (m !== undefined) {
      // Insertion order is expiry order (one TTL, time moving forward): stop at the first live one.
      for (const [id, [cost, expiresAt]] of m.open) {
        if (expiresAt > nowMs) break;
        m.open.delete(id);
        m.reserved -= cost;
      }
    }
  }

  month(stamp: string): MonthCounters {
    let m = this.months.get(stamp);
    if (m === undefined) {
      m = { spent: 0, reserved: 0, open: new Map() };
      this.months.set(stamp, m);
      // Keep this month and the last (for late settles); older months are history.
      for (const key of this.months.keys()) if (key < stamp && this.months.size > 2) this.months.delete(key);
    }
    return m;
  }

  windows(): WindowNumbers {
    return {
      requests: this.requests.size,
      oldestRequestAt: this.requests.first() ?? null,
      tokens: this.tokenSum,
      oldestTokensAt: this.tokenLog.first()?.at ?? null,
    };
  }
}

/**
 * The embedded store: exact on one replica. Its decision is the Lua script's, in the same
 * order (scopes in order; RPM, TPM, day, budget), and it is atomic because it never awaits.
 */
export class MemoryGovernanceStore implements GovernanceStore {
  readonly #scopes = new Map<string, ScopeCounters>();
  readonly #reservationTtlMs: number;

  constructor(options: { reservationTtlMs?: number } = {}) {
    this.#reservationTtlMs = options.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
  }

  #counters(s: ScopeRef): ScopeCounters {
    const key = `${s.kind}\u0000${s.team}\u0000${s.id}`;
    let c = this.#scopes.get(key);
    if (c === undefined) {
      c = new ScopeCounters();
      this.#scopes.set(key, c);
    }
    return c;
  }

  async reserve(input: ReserveInput): Promise<ReserveResult> {
    const { scopes, tokens, costMicroUsd, nowMs } = input;
    const day = utcDayStamp(nowMs);
    const month = utcMonthStamp(nowMs);
    const counters = scopes.map((s) => this.#counters(s));
    for (const c of counters) c.purge(nowMs, month);
    const warnings: ScopeRef[] = [];
    for (const [i, s] of scopes.entries()) {
      const c = counters[i] as ScopeCounters;
      const { rpm, tpm, tokensPerDay, budgetMicroUsdPerMonth } = s.limits;
      const view = () =>
        rateLimitView(
          scopes,
          counters.map((x) => x.windows()),
          nowMs,
        );
      if (rpm !== undefined && c.requests.size + 1 > rpm) {
        const frees = rpm > 0 ? (c.requests.get(c.requests.size - rpm) as number) + WINDOW_MS - nowMs : WINDOW_MS;
        return { ok: false, refusal: limitRefusal(s, 'rpm', frees, nowMs, view()) };
      }
      if (tpm !== undefined && c.tokenSum + tokens > tpm) {
        return { ok: false, refusal: limitRefusal(s, 'tpm', tokensFreeAt(c, tokens, tpm, nowMs), nowMs, view()) };
      }
      if (tokensPerDay !== undefined && (c.days.get(day) ?? 0) + tokens > tokensPerDay) {
        return { ok: false, refusal: limitRefusal(s, 'tokens_per_day', 0, nowMs, view()) };
      }
      if (budgetMicroUsdPerMonth !== undefined) {
        const m = c.months.get(month);
        if ((m?.spent ?? 0) + (m?.reserved ?? 0) + costMicroUsd > budgetMicroUsdPerMonth) {
          if (s.limits.budgetOnExceeded === 'warn') warnings.push(scopeRef(s));
          else return { ok: false, refusal: limitRefusal(s, 'budget', 0, nowMs, view()) };
        }
      }
    }
    const id = randomUUID();
    for (const c of counters) {
      c.requests.insert(nowMs);
      const entry: TokenEntry = { id, at: nowMs, tokens };
      c.tokenLog.insert(entry);
      c.tokenById.set(id, entry);
      c.tokenSum += tokens;
      for (const key of c.days.keys()) if (key < day) c.days.delete(key);
      c.days.set(day, (c.days.get(day) ?? 0) + tokens);
      const m = c.month(month);
      m.reserved += costMicroUsd;
      m.open.set(id, [costMicroUsd, nowMs + this.#reservationTtlMs]);
    }
    const reservation: Reservation = { id, scopes: scopes.map(scopeRef), atMs: nowMs, tokens, costMicroUsd, day, month, enforced: true };
    return {
      ok: true,
      reservation,
      rateLimit: rateLimitView(
        scopes,
        counters.map((c) => c.windows()),
        nowMs,
      ),
      budgetWarnings: warnings,
    };
  }

  async settle(r: Reservation, actual: Actual, _nowMs: number): Promise<void> {
    for (const s of r.scopes) {
      const c = this.#counters(s);
      const entry = c.tokenById.get(r.id);
      if (entry !== undefined) {
        c.tokenSum += actual.tokens - entry.tokens;
        entry.tokens = actual.tokens;
      }
      const day = c.days.get(r.day);
      if (day !== undefined) c.days.set(r.day, Math.max(0, day + actual.tokens - r.tokens));
      const m = c.month(r.month);
      const open = m.open.get(r.id);
      if (open !== undefined) {
        m.open.delete(r.id);
        m.reserved -= open[0];
      }
      m.spent += actual.costMicroUsd;
    }
  }

  release(r: Reservation, nowMs: number): Promise<void> {
    return this.settle(r, { tokens: 0, costMicroUsd: 0 }, nowMs);
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
        requestsThisMinute: { used: c.requests.size, limit: s.limits.rpm ?? null },
        tokensThisMinute: { used: c.tokenSum, limit: s.limits.tpm ?? null },
        tokensToday: { used: c.days.get(day) ?? 0, limit: s.limits.tokensPerDay ?? null },
        spendThisMonthMicroUsd: { used: m?.spent ?? 0, reservedMicroUsd: m?.reserved ?? 0, limit: s.limits.budgetMicroUsdPerMonth ?? null },
      };
    });
  }

  async close(): Promise<void> {}
}

/** When enough of the token log expires for `tokens` more to fit under `tpm`. */
function tokensFreeAt(c: ScopeCounters, tokens: number, tpm: number, nowMs: number): number {
  if (tokens > tpm) return WINDOW_MS;
  let freed = 0;
  for (const e of c.tokenLog) {
    freed += e.tokens;
    if (c.tokenSum - freed + tokens <= tpm) return e.at + WINDOW_MS - nowMs;
  }
  return WINDOW_MS;
}
