import type { LimitKind, Limits, Scope } from './limits.js';
import { WINDOW_MS } from './limits.js';
import {
  type Actual,
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

// What the redis store's Lua scripts (lua/*.lua) take and give back: each store call as one
// script's KEYS and ARGV, and each reply as the store's result types. No connection and no
// clock of its own (the time is Redis's, read in the script, or a test's), so the wire format
// is tested without Redis; the store keeps the queues, the connection and the deadline.

/** A scope's three keys: the sliding log, the counters hash, the open reservations (layout in lua/common.lua). */
export type ScopeKeys = readonly [log: string, counters: string, resv: string];

/** A scope's keys as the caller looks them up (the store builds them once per scope object). */
export type KeysOf = (s: ScopeRef) => ScopeKeys;

export interface ScriptCall {
  readonly keys: string[];
  readonly args: Array<string | number>;
}

/** A reserve in a batch, with the id its reservation will carry. */
export interface ReserveEntry {
  readonly input: ReserveInput;
  readonly id: string;
}

export interface SettleEntry {
  readonly r: Reservation;
  readonly actual: Actual;
}

/** An idle scope's counters outlive the longest month, so a month's spend is never forgotten while it runs. */
export const COUNTERS_TTL_MS = 62 * 24 * 3600 * 1000;

/**
 * `<prefix>{<team>}:t:…` for a team, `<prefix>{<team>}:k:<id>:…` for a key: the braces are
 * a Cluster hash tag, so every key of a team is in one slot and a batch may span its scopes.
 */
export function scopeKeys(prefix: string, s: ScopeRef): ScopeKeys {
  // A team's own counters are `t`; its other scopes (its tool-call counters, `<team>/tools`)
  // are named by their id, so they never share a team's model counters.
  const who = s.kind === 'team' ? (s.id === s.team ? 't' : `t:${s.id}`) : `k:${s.id}`;
  const base = `${prefix}{${s.team}}:${who}`;
  return [`${base}:log`, `${base}:counters`, `${base}:resv`];
}

/**
 * The scope's number (1-based) among a batch's distinct scopes, its three keys added to
 * `keys` the first time. Distinct by key, not by object: two generations' scope objects
 * of one team share counters.
 */
function numberOf(s: ScopeRef, keysOf: KeysOf, keys: string[], numbers: Map<string, number>): number {
  const scopeKeys = keysOf(s);
  let n = numbers.get(scopeKeys[0]);
  if (n === undefined) {
    n = numbers.size + 1;
    numbers.set(scopeKeys[0], n);
    keys.push(scopeKeys[0], scopeKeys[1], scopeKeys[2]);
  }
  return n;
}

/**
 * The clock a script decides by: Redis's own (`TIME`, read inside the script: one clock for
 * every replica), or a time the caller gives (tests that simulate time).
 */
export type ScriptClock = { readonly kind: 'redis' } | { readonly kind: 'caller'; readonly nowMs: number };

/**
 * One reserve script call for a batch of one team, all decided at one time (`clock`). Each
 * distinct limit set (by object: one generation's scopes share theirs) is sent once, and
 * each reservation names its scopes and limit sets by number (ARGV layout in
 * lua/reserve.lua). `deadlineMs` is Redis's time after which the batch must not take
 * effect (-1: none).
 */
export function encodeReserves(
  clock: ScriptClock,
  deadlineMs: number,
  entries: readonly ReserveEntry[],
  reservationTtlMs: number,
  keysOf: KeysOf,
): ScriptCall {
  const keys: string[] = [];
  const keyNumbers = new Map<string, number>();
  const limitNumbersOf = new Map<Limits, number>();
  const limitArgs: Array<string | number> = [];
  const reserveArgs: Array<string | number> = [entries.length];
  for (const { input, id } of entries) {
    reserveArgs.push(id, input.tokens, input.costMicroUsd, input.scopes.length);
    for (const s of input.scopes) {
      const k = numberOf(s, keysOf, keys, keyNumbers);
      let l = limitNumbersOf.get(s.limits);
      if (l === undefined) {
        l = limitNumbersOf.size + 1;
        limitNumbersOf.set(s.limits, l);
        for (const v of limitNumbers(s.limits)) limitArgs.push(v);
      }
      reserveArgs.push(k, l);
    }
  }
  const args: Array<string | number> = [clockArg(clock), deadlineMs, WINDOW_MS, COUNTERS_TTL_MS, reservationTtlMs, limitNumbersOf.size];
  for (const v of limitArgs) args.push(v);
  for (const v of reserveArgs) args.push(v);
  return { keys, args };
}

function clockArg(clock: ScriptClock): number {
  return clock.kind === 'redis' ? -1 : clock.nowMs;
}

/** A reserve script's reply: its results, or that it ran past its deadline and wrote nothing. */
export type ReservesReply =
  | {
      readonly expired: false;
      /** Redis's clock when the script ran (epoch ms). */
      readonly redisNowMs: number;
      readonly results: ReserveResult[];
    }
  | { readonly expired: true; readonly redisNowMs: number };

/**
 * Each entry's result from the reserve script's reply, in order. The reservations carry the
 * time, day and month the script decided at (Redis's clock, or the caller's), so that their
 * settles book to the same day and month and correct the same log entry.
 */
export function decodeReserves(reply: unknown, entries: readonly ReserveEntry[]): ReservesReply {
  const flat = reply as ReadonlyArray<number | string>;
  if (flat[0] !== 1) return { expired: true, redisNowMs: Number(flat[1]) };
  const nowMs = Number(flat[1]);
  const day = String(flat[3]);
  const month = String(flat[4]);
  const results: ReserveResult[] = [];
  let at = 5;
  for (const e of entries) {
    results.push(reserved(e, flat, at, nowMs, day, month));
    at += 4 + 4 * e.input.scopes.length;
  }
  return { expired: false, redisNowMs: Number(flat[2]), results };
}

/**
 * One reservation's answer, at `at` in the reply: {1, warnMask, 0, 0} or {0, scope, limit,
 * retryMs (for a budget: micro-USD left)}, then its windows.
 */
function reserved(
  e: ReserveEntry,
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
  const limit = out[at + 2] as LimitKind;
  // The last field is the retry time, or for a budget what was left of it.
  const n = Number(out[at + 3]);
  const view = rateLimitView(scopes, windows, nowMs);
  return {
    ok: false,
    refusal: limit === 'budget' ? limitRefusal(scope, limit, 0, nowMs, view, n) : limitRefusal(scope, limit, n, nowMs, view),
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

/**
 * One settle script call for a batch of one team (ARGV layout in lua/settle.lua). Each
 * reservation carries its own day, month and time, so a settle books to when it was reserved.
 * The script's reply (the count) carries nothing the store needs.
 */
export function encodeSettles(entries: readonly SettleEntry[], keysOf: KeysOf): ScriptCall {
  const keys: string[] = [];
  const keyNumbers = new Map<string, number>();
  const args: Array<string | number> = [entries.length];
  for (const { r, actual } of entries) {
    // Never a negative actual (a refund of what other requests booked), nor NaN, which the
    // script could not read; the script clamps again.
    args.push(
      r.id,
      r.tokens,
      atLeastZero(actual.tokens),
      atLeastZero(actual.costMicroUsd),
      r.costMicroUsd,
      r.month,
      r.day,
      r.atMs,
      r.scopes.length,
    );
    for (const s of r.scopes) args.push(numberOf(s, keysOf, keys, keyNumbers));
  }
  return { keys, args };
}

function atLeastZero(n: number): number {
  return Number.isNaN(n) ? 0 : Math.max(0, n);
}

/** One status script call: one key triple per scope asked for, in order, repeats included (lua/status.lua). */
export function encodeStatus(scopes: readonly Scope[], clock: ScriptClock, keysOf: KeysOf): ScriptCall {
  return {
    keys: scopes.flatMap((s) => keysOf(s)),
    args: [clockArg(clock), WINDOW_MS, scopes.length],
  };
}

/** The status script's five numbers per scope, each against the scope's limit (null = none). */
export function decodeStatus(reply: unknown, scopes: readonly Scope[]): ScopeStatus[] {
  const out = (reply as number[]).map(Number);
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
