import type { LimitKind, Limits, RateLimitView, RateWindowView, Refusal, Scope, ScopeKind } from './limits.js';
import { msUntilNextUtcDay, msUntilNextUtcMonth, NO_RATE_LIMIT, scopeWho, secondsCeil, WINDOW_MS } from './limits.js';

// The counters behind rate limits, quotas and budgets, and the one interface both stores
// (memory, redis) implement. Both run the same decision: check every scope in order, then
// commit to every scope, as one atomic step (synchronous code in memory, one Lua script in
// Redis), so a pre-check is all-or-nothing and concurrent requests cannot both take the
// last unit. test/governance/store-suite.ts holds the behaviour both must show.

export interface ReserveInput {
  /** Checked in order: the team, then the key. */
  readonly scopes: readonly Scope[];
  /** Estimated tokens (input estimate + max output), taken from TPM and the daily quota. */
  readonly tokens: number;
  /** Worst-case cost reserved against the monthly budgets, integer micro-USD. */
  readonly costMicroUsd: number;
  /**
   * When the caller asks (governance/clock.ts). The memory store decides by it; the redis
   * store decides by Redis's own clock and uses it only to group reserves into batches.
   */
  readonly nowMs: number;
}

export interface ScopeRef {
  readonly kind: ScopeKind;
  readonly id: string;
  readonly team: string;
}

/** What a pre-check took; settle or release gives it back exactly once. */
export interface Reservation {
  readonly id: string;
  readonly scopes: readonly ScopeRef[];
  readonly atMs: number;
  readonly tokens: number;
  readonly costMicroUsd: number;
  /** UTC day and month the tokens and the spend are booked to (the reservation's, even when settled later). */
  readonly day: string;
  readonly month: string;
  /** False when fail_open admitted the request without the store: settle has nothing to give back. */
  readonly enforced: boolean;
}

export type ReserveResult =
  | {
      readonly ok: true;
      readonly reservation: Reservation;
      readonly rateLimit: RateLimitView;
      readonly budgetWarnings: readonly ScopeRef[];
    }
  | { readonly ok: false; readonly refusal: Refusal };

/** The actual usage of a settled request. */
export interface Actual {
  readonly tokens: number;
  readonly costMicroUsd: number;
}

export interface Counted {
  readonly used: number;
  readonly limit: number | null;
}

/** One team's or key's counters now, each against its limit (null = unlimited). */
export interface ScopeStatus {
  readonly kind: ScopeKind;
  readonly id: string;
  readonly requestsThisMinute: Counted;
  readonly tokensThisMinute: Counted;
  readonly tokensToday: Counted;
  readonly spendThisMonthMicroUsd: Counted & { readonly reservedMicroUsd: number };
}

/**
 * A value now, or a promise of it. The request-path operations of a store answer with the
 * value itself when they can (the memory store always does), so that a request it admits
 * waits for no promise; a remote store answers with a promise.
 */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Small records shared by every replica beside the counters: which team and candidate
 * created a response id. Values are opaque strings; each expires after its ttl.
 */
export interface SharedRecords {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface GovernanceStore {
  /** Present on a store shared by replicas (redis); absent on one that is per process. */
  readonly records?: SharedRecords;
  /** Check every scope's limits, then take from all of them, or from none. */
  reserve(input: ReserveInput): MaybePromise<ReserveResult>;
  /** Replace the reservation with what the request used (tokens true up TPM and the day). */
  settle(reservation: Reservation, actual: Actual, nowMs: number): MaybePromise<void>;
  /** Give the reservation back (the request failed before using anything). */
  release(reservation: Reservation, nowMs: number): MaybePromise<void>;
  status(scopes: readonly Scope[], nowMs: number): Promise<ScopeStatus[]>;
  /** Resolves true once the backend answers, false after timeoutMs (a remote store keeps reconnecting). */
  ready?(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The store could not answer (Redis unreachable, timed out): the store error policy decides. */
export class GovernanceStoreError extends Error {
  readonly code = 'governance_store_error';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GovernanceStoreError';
  }
}

/** Raw numbers of one scope's windows, as both stores read them. */
export interface WindowNumbers {
  readonly requests: number;
  /** Epoch ms of the oldest request in the window, or null. */
  readonly oldestRequestAt: number | null;
  readonly tokens: number;
  readonly oldestTokensAt: number | null;
}

/** The tightest scope's remaining requests and tokens, for the `x-ratelimit-*` headers. */
export function rateLimitView(scopes: readonly Scope[], windows: readonly WindowNumbers[], nowMs: number): RateLimitView {
  let requests: RateWindowView | null = null;
  let tokens: RateWindowView | null = null;
  for (let i = 0; i < scopes.length; i++) {
    const w = windows[i];
    if (w === undefined) continue;
    const { rpm, tpm } = (scopes[i] as Scope).limits;
    if (rpm !== undefined) {
      const view = { limit: rpm, remaining: Math.max(0, rpm - w.requests), resetMs: resetOf(w.oldestRequestAt, nowMs) };
      if (requests === null || view.remaining < requests.remaining) requests = view;
    }
    if (tpm !== undefined) {
      const view = { limit: tpm, remaining: Math.max(0, tpm - w.tokens), resetMs: resetOf(w.oldestTokensAt, nowMs) };
      if (tokens === null || view.remaining < tokens.remaining) tokens = view;
    }
  }
  return requests === null && tokens === null ? NO_RATE_LIMIT : { requests, tokens };
}

function resetOf(oldestAt: number | null, nowMs: number): number {
  return oldestAt === null ? 0 : Math.max(0, oldestAt + WINDOW_MS - nowMs);
}

/**
 * The refusal for scope `scope` and limit `limit`. `retryMs` is when the sliding window
 * frees enough (rpm/tpm); days and months reset at UTC midnight. A budget refusal takes
 * `leftMicroUsd`, what the scope had left (budget − spent − reserved): its message says how
 * that compares with the request (the pre-check, which knows the request, says more).
 */
export function limitRefusal(
  scope: Scope,
  limit: LimitKind,
  retryMs: number,
  nowMs: number,
  rateLimit: RateLimitView,
  leftMicroUsd = 0,
): Refusal {
  const who = scopeWho(scope.kind, scope.id);
  const l = scope.limits;
  const scopeRef = { kind: scope.kind, id: scope.id };
  if (limit === 'budget') {
    const budget = { limitMicroUsd: l.budgetMicroUsdPerMonth ?? 0, leftMicroUsd };
    const message =
      leftMicroUsd > 0
        ? `${who} has ${formatUsd(leftMicroUsd)} left of its budget of ${formatUsd(budget.limitMicroUsd)} this UTC month, less than this request reserves`
        : spentMessage(who, budget.limitMicroUsd);
    const retryAfterS = secondsCeil(msUntilNextUtcMonth(nowMs));
    return { code: 'budget_exceeded', message, retryAfterS, scope: scopeRef, limit, rateLimit, budget };
  }
  const [code, message, waitMs]: [Refusal['code'], string, number] =
    limit === 'rpm'
      ? ['rate_limit_exceeded', `${who} is over its limit of ${l.rpm} requests per minute`, retryMs]
      : limit === 'tpm'
        ? ['rate_limit_exceeded', `${who} is over its limit of ${l.tpm} tokens per minute`, retryMs]
        : ['quota_exceeded', `${who} has used its quota of ${l.tokensPerDay} tokens for this UTC day`, msUntilNextUtcDay(nowMs)];
  return { code, message, retryAfterS: secondsCeil(waitMs), scope: scopeRef, limit, rateLimit };
}

/** Nothing left: spent, or held by requests still in flight (their reservations come back as they settle). */
export function spentMessage(who: string, limitMicroUsd: number): string {
  return `${who} has no budget left this UTC month: its budget of ${formatUsd(limitMicroUsd)} is spent or reserved by requests in flight; it renews at the start of the next UTC month`;
}

export function formatUsd(microUsd: number): string {
  return `${(microUsd / 1e6).toFixed(6).replace(/\.?0+$/, '')} USD`;
}

/** Limits as the stores pass them to a script: -1 = none. */
export function limitNumbers(l: Limits): [number, number, number, number, number] {
  return [l.rpm ?? -1, l.tpm ?? -1, l.tokensPerDay ?? -1, l.budgetMicroUsdPerMonth ?? -1, l.budgetOnExceeded === 'warn' ? 1 : 0];
}

export function scopeRef(s: Scope): ScopeRef {
  return { kind: s.kind, id: s.id, team: s.team };
}

/** How long a reservation may stay unsettled before the store gives it back by itself (a crashed replica). */
export const DEFAULT_RESERVATION_TTL_MS = 60 * 60 * 1000;
