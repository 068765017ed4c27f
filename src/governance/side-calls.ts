import type { LimitKind, Principal, RateLimitView, Refusal, Scope } from './limits.js';
import { NO_RATE_LIMIT, scopeWho } from './limits.js';
import type { GovernanceStore, MaybePromise, Reservation } from './store.js';

// What tools/call on /mcp and messages to agents on /a2a share: each is counted in counters
// of its own beside a team's and key's model counters (scope ids `<id>/tools`,
// `<id>/agents`), under the same store and the same atomic reserve. Their rpm is the team's or
// key's rpm, in a window apart; their daily quota is booked as one "token" a call; tpm and
// budgets do not apply. A call that reached nothing is given back (release); one that reached
// its upstream stays counted (settle). tool-calls.ts and agent-messages.ts say which is which.

export type SideAdmission =
  | { readonly ok: true; readonly reservation: Reservation | null; readonly rateLimit: RateLimitView }
  | { readonly ok: false; readonly refusal: Refusal };

/** One kind of side call: its counters' suffix, and how a refusal names it. */
export interface SideCall {
  /** `/tools`, `/agents`. */
  readonly suffix: string;
  /** The daily quota's name (`tool_calls_per_day`). */
  readonly quota: LimitKind;
  /** What is counted, in a refusal's words (`tool calls`, `messages to agents`). */
  readonly counted: string;
}

const ADMITTED_FREELY: SideAdmission = Object.freeze({ ok: true, reservation: null, rateLimit: NO_RATE_LIMIT });

/**
 * Takes one call from `scopes` (the team's and key's counters of this kind), atomically or
 * not at all. Answers at once when the store does (the memory store, or nothing to count).
 */
export function admitSideCall(
  store: GovernanceStore,
  side: SideCall,
  principal: Principal,
  scopes: readonly Scope[] | undefined,
  nowMs: number,
): MaybePromise<SideAdmission> {
  if (principal.keyId === null) return ADMITTED_FREELY;
  if (scopes === undefined || scopes.every((s) => s.limits.rpm === undefined && s.limits.tokensPerDay === undefined))
    return ADMITTED_FREELY;
  const reserved = store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs });
  const decide = (r: Awaited<typeof reserved>): SideAdmission =>
    r.ok ? { ok: true, reservation: r.reservation, rateLimit: r.rateLimit } : { ok: false, refusal: sideRefusal(side, r.refusal) };
  return reserved instanceof Promise ? reserved.then(decide) : decide(reserved);
}

/** The store's refusal in the side call's words: the scope's own id, and the daily quota named as its own. */
function sideRefusal(side: SideCall, refusal: Refusal): Refusal {
  const scope =
    refusal.scope === null
      ? null
      : {
          kind: refusal.scope.kind,
          id: refusal.scope.id.endsWith(side.suffix) ? refusal.scope.id.slice(0, -side.suffix.length) : refusal.scope.id,
        };
  const who = scope === null ? '' : `${scopeWho(scope.kind, scope.id)} `;
  let message = refusal.message.split(`${side.suffix}"`).join('"');
  let limit: LimitKind | null = refusal.limit;
  if (refusal.limit === 'tokens_per_day') {
    message = `${who}has used its quota of ${side.counted} for this UTC day`;
    limit = side.quota;
  } else if (refusal.limit === 'rpm') message = `${who}is over its limit of ${side.counted} per minute (rpm)`;
  return { ...refusal, message, scope, limit };
}

/** After the call: counted when it reached its upstream (settle), given back when it reached none (release). */
export function finishSideCall(
  store: GovernanceStore,
  reservation: Reservation | null,
  reached: boolean,
  nowMs: number,
): MaybePromise<void> {
  if (reservation === null) return;
  return reached ? store.settle(reservation, { tokens: 1, costMicroUsd: 0 }, nowMs) : store.release(reservation, nowMs);
}
