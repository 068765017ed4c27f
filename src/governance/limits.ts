import type { ErrorCode } from '../errors.js';

/**
 * Flat limits of one team or one key, as the generation holds them. Absent = no limit.
 * Budgets are integer micro-USD per UTC month.
 */
export interface Limits {
  readonly rpm?: number;
  readonly tpm?: number;
  readonly tokensPerDay?: number;
  readonly budgetMicroUsdPerMonth?: number;
  /** tools/call a UTC day (/mcp); counted in the scope's tool-call counters (see tool-calls.ts). */
  readonly toolCallsPerDay?: number;
  /** Messages to agents a UTC day (/a2a); counted in the scope's agent counters (see agent-messages.ts). */
  readonly agentMessagesPerDay?: number;
  /** `warn` admits a request over budget and flags it; default `block`. */
  readonly budgetOnExceeded?: 'block' | 'warn';
}

export type ScopeKind = 'team' | 'key';

/**
 * A counter owner: a team or a key, named by id only. Counters are keyed by (kind, id) and
 * never by the limits object, so a reload that changes a limit keeps the count.
 */
export interface Scope {
  readonly kind: ScopeKind;
  readonly id: string;
  /** The key's team: keeps one team's keys together (one Redis Cluster slot). */
  readonly team: string;
  readonly limits: Limits;
}

/**
 * Who is calling: a key and its team, a signed-in caller (a JWT's principal, in the key's
 * place) and its team, or the open gateway's anonymous caller (both null).
 */
export interface Principal {
  /** The key's id, or a signed-in caller's principal id (`jwt:<issuer>:<subject>`). */
  readonly keyId: string | null;
  readonly team: string | null;
  /** A signed-in caller's own counters and narrower lists; absent for a key or the anonymous caller. */
  readonly grant?: Grant;
}

/**
 * What a signed-in caller holds in place of a key's entry in the policy: built per principal
 * (they are not known in advance, as keys are), from its token's claims and its issuer's
 * limits. Its scopes share the team's scope object with the team's keys.
 */
export interface Grant {
  /** Its team's scope, then its own: what a model request is counted against. */
  readonly scopes: readonly Scope[];
  /** The same for tools/call: the team's tool-call counters, then its own. */
  readonly toolScopes: readonly Scope[];
  /** Models its token's scopes allow, within the team's; null = the team's. */
  readonly models: ((model: string) => boolean) | null;
  /** Tools its token's scopes allow, within the team's; null = the team's. */
  readonly tools: ((tool: string) => boolean) | null;
  /** The same for messages to agents: the team's agent counters, then its own. */
  readonly agentScopes: readonly Scope[];
}

export type LimitKind = 'rpm' | 'tpm' | 'tokens_per_day' | 'budget' | 'tool_calls_per_day' | 'agent_messages_per_day';

/** Values for the `x-ratelimit-*-requests` / `-tokens` headers, from the tightest scope. */
export interface RateWindowView {
  readonly limit: number;
  readonly remaining: number;
  /** Until the window admits the next unit again (ms, >= 0). */
  readonly resetMs: number;
}

export interface RateLimitView {
  readonly requests: RateWindowView | null;
  readonly tokens: RateWindowView | null;
}

export const NO_RATE_LIMIT: RateLimitView = Object.freeze({ requests: null, tokens: null });

/**
 * A typed refusal: server/ renders it (see refusalError). `scope` and `limit` say which
 * limit refused; `retryAfterS` is whole seconds, at least 1.
 */
export interface Refusal {
  readonly code: Extract<
    ErrorCode,
    | 'unauthorized'
    | 'forbidden'
    | 'key_expired'
    | 'model_not_allowed'
    | 'tool_not_allowed'
    | 'agent_not_allowed'
    | 'rate_limit_exceeded'
    | 'quota_exceeded'
    | 'budget_exceeded'
    | 'over_limit_capacity'
    | 'governance_unavailable'
  >;
  readonly message: string;
  readonly retryAfterS: number | null;
  readonly scope: { readonly kind: ScopeKind; readonly id: string } | null;
  readonly limit: LimitKind | null;
  readonly rateLimit: RateLimitView;
  /** A budget refusal's numbers: the scope's monthly budget, and what was left of it (budget − spent − reserved; may be below 0). */
  readonly budget?: { readonly limitMicroUsd: number; readonly leftMicroUsd: number };
}

export const WINDOW_MS = 60_000;

// Every pre-check and settle needs the day and month stamps; formatting a date costs about
// a microsecond, so the stamp of the current UTC day is kept with that day's bounds.
let dayStart = 0;
let dayEnd = -1;
let dayStamp = '';
let monthStamp = '';

function stampsFor(nowMs: number): void {
  if (nowMs >= dayStart && nowMs < dayEnd) return;
  const d = new Date(nowMs);
  dayStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  dayEnd = dayStart + 86_400_000;
  const iso = d.toISOString();
  dayStamp = iso.slice(0, 10).replaceAll('-', '');
  monthStamp = iso.slice(0, 7).replace('-', '');
}

/** `2026-11-30T23:59:59Z` -> `20261130`: the UTC day a token count belongs to. */
export function utcDayStamp(nowMs: number): string {
  stampsFor(nowMs);
  return dayStamp;
}

/** `202611`: the UTC month a spend belongs to. */
export function utcMonthStamp(nowMs: number): string {
  stampsFor(nowMs);
  return monthStamp;
}

export function msUntilNextUtcDay(nowMs: number): number {
  const d = new Date(nowMs);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) - nowMs;
}

export function msUntilNextUtcMonth(nowMs: number): number {
  const d = new Date(nowMs);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) - nowMs;
}

export function secondsCeil(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * How a refusal names a scope: `team "a"`, `key "k"`, or `principal "jwt:corp:alice"` for a
 * signed-in caller's own counters (a key id never holds the colon a principal id starts with).
 */
export function scopeWho(kind: ScopeKind, id: string): string {
  return `${kind === 'key' && id.startsWith('jwt:') ? 'principal' : kind} "${id}"`;
}
