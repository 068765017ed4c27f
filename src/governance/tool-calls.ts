import type { LimitKind, Principal, RateLimitView, Refusal, ScopeKind } from './limits.js';
import { NO_RATE_LIMIT, scopeWho } from './limits.js';
import { type GovernancePolicy, ownerOf, ownList } from './policy.js';
import type { GovernanceStore, MaybePromise, Reservation } from './store.js';

// Governance of the /mcp endpoint's tools/call. A call is counted in counters of its own,
// beside each team's and key's model counters: the scope ids `<team>/tools` and
// `<key>/tools` (a `/` no team or key id may hold), under the same store and the same atomic
// reserve. Their rpm is the team's or key's rpm (so rpm limits tool calls, in a window apart
// from model requests, and initialize or tools/list count nothing), their daily quota is
// tool_calls_per_day (booked as one "token" a call), and nothing else: tpm and budgets do
// not apply to tools. A call that reached no server is given back (release); one that did
// stays counted (settle).

export type ToolAdmission =
  | { readonly ok: true; readonly reservation: Reservation | null; readonly rateLimit: RateLimitView }
  | { readonly ok: false; readonly refusal: Refusal };

const ADMITTED_FREELY: ToolAdmission = Object.freeze({ ok: true, reservation: null, rateLimit: NO_RATE_LIMIT });

/** `tool_not_allowed` when the principal's team, or its key, may not call `tool`; null when it may. */
export function checkTool(policy: GovernancePolicy, principal: Principal, tool: string): Refusal | null {
  if (principal.team === null) return null;
  const team = policy.teams.get(principal.team);
  if (team !== undefined && !team.allowsTool(tool))
    return toolRefusal(`team "${principal.team}" may not use tool "${tool}"`, 'team', principal.team);
  const own = ownList(policy, principal, 'tools');
  if (own !== null && !own(tool)) {
    const who = ownerOf(principal);
    return toolRefusal(`${who} may not use tool "${tool}"`, 'key', principal.keyId as string);
  }
  return null;
}

/** Whether the principal may see `tool` in tools/list: what checkTool would allow. */
export function mayUseTool(policy: GovernancePolicy, principal: Principal, tool: string): boolean {
  return checkTool(policy, principal, tool) === null;
}

function toolRefusal(message: string, kind: ScopeKind, id: string): Refusal {
  return { code: 'tool_not_allowed', message, retryAfterS: null, scope: { kind, id }, limit: null, rateLimit: NO_RATE_LIMIT };
}

/**
 * Admits one tools/call: the allow-lists, then the tool-call counters of the team and key
 * (rpm, tool_calls_per_day), taken atomically or not at all. Answers at once when the store
 * does (the memory store, or nothing to count).
 */
export function admitToolCall(
  store: GovernanceStore,
  policy: GovernancePolicy,
  principal: Principal,
  tool: string,
  nowMs: number,
): MaybePromise<ToolAdmission> {
  const denied = checkTool(policy, principal, tool);
  if (denied !== null) return { ok: false, refusal: denied };
  if (principal.keyId === null) return ADMITTED_FREELY;
  const scopes = principal.grant?.toolScopes ?? policy.toolScopesByKey.get(principal.keyId);
  if (scopes === undefined || scopes.every((s) => s.limits.rpm === undefined && s.limits.tokensPerDay === undefined))
    return ADMITTED_FREELY;
  const reserved = store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs });
  const decide = (r: Awaited<typeof reserved>): ToolAdmission =>
    r.ok ? { ok: true, reservation: r.reservation, rateLimit: r.rateLimit } : { ok: false, refusal: asToolRefusal(r.refusal) };
  return reserved instanceof Promise ? reserved.then(decide) : decide(reserved);
}

/** The store's refusal in tool-call words: the scope's own id, and the daily quota named as tool calls. */
function asToolRefusal(refusal: Refusal): Refusal {
  const scope = refusal.scope === null ? null : { kind: refusal.scope.kind, id: refusal.scope.id.replace(/\/tools$/, '') };
  const who = scope === null ? '' : `${scopeWho(scope.kind, scope.id)} `;
  let message = refusal.message.replace(/"([^"]*)\/tools"/, '"$1"');
  let limit: LimitKind | null = refusal.limit;
  if (refusal.limit === 'tokens_per_day') {
    message = `${who}has used its quota of tool calls for this UTC day`;
    limit = 'tool_calls_per_day';
  } else if (refusal.limit === 'rpm') message = `${who}is over its limit of tool calls per minute (rpm)`;
  return { ...refusal, message, scope, limit };
}

/** After the call: counted when it reached a server (settle), given back when it reached none (release). */
export function finishToolCall(
  store: GovernanceStore,
  reservation: Reservation | null,
  reached: boolean,
  nowMs: number,
): MaybePromise<void> {
  if (reservation === null) return;
  return reached ? store.settle(reservation, { tokens: 1, costMicroUsd: 0 }, nowMs) : store.release(reservation, nowMs);
}
