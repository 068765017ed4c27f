import type { LimitKind, Principal, RateLimitView, Refusal, ScopeKind } from './limits.js';
import { NO_RATE_LIMIT, scopeWho } from './limits.js';
import { type GovernancePolicy, ownerOf, ownList } from './policy.js';
import type { GovernanceStore, MaybePromise, Reservation } from './store.js';

// Governance of the /a2a endpoints. A message to an agent (SendMessage, SendStreamingMessage
// and their 0.3 names) is counted in counters of its own, beside each team's and key's model
// and tool-call counters: the scope ids `<team>/agents` and `<key>/agents`, under the same
// store and the same atomic reserve. Their rpm is the team's or key's rpm (in a window apart
// from model requests and tool calls), their daily quota agent_messages_per_day (booked as
// one "token" a message). Reads (a task, a card, a list) count nothing. A message that
// reached no agent is given back (release); one that did stays counted (settle).

export type AgentAdmission =
  | { readonly ok: true; readonly reservation: Reservation | null; readonly rateLimit: RateLimitView }
  | { readonly ok: false; readonly refusal: Refusal };

const ADMITTED_FREELY: AgentAdmission = Object.freeze({ ok: true, reservation: null, rateLimit: NO_RATE_LIMIT });

/** `agent_not_allowed` when the principal's team, or its key, may not use `agent`; null when it may. */
export function checkAgent(policy: GovernancePolicy, principal: Principal, agent: string): Refusal | null {
  if (principal.team === null) return null;
  const team = policy.teams.get(principal.team);
  if (team !== undefined && !team.allowsAgent(agent))
    return agentRefusal(`team "${principal.team}" may not use agent "${agent}"`, 'team', principal.team);
  const own = ownList(policy, principal, 'agents');
  if (own !== null && !own(agent))
    return agentRefusal(`${ownerOf(principal)} may not use agent "${agent}"`, 'key', principal.keyId as string);
  return null;
}

/** Whether `GET /a2a` lists `agent` to the principal: what checkAgent would allow. */
export function mayUseAgent(policy: GovernancePolicy, principal: Principal, agent: string): boolean {
  return checkAgent(policy, principal, agent) === null;
}

function agentRefusal(message: string, kind: ScopeKind, id: string): Refusal {
  return { code: 'agent_not_allowed', message, retryAfterS: null, scope: { kind, id }, limit: null, rateLimit: NO_RATE_LIMIT };
}

/**
 * Admits one message to an agent: the allow-lists, then the agent counters of the team and
 * key (rpm, agent_messages_per_day), taken atomically or not at all. Answers at once when
 * the store does (the memory store, or nothing to count).
 */
export function admitAgentMessage(
  store: GovernanceStore,
  policy: GovernancePolicy,
  principal: Principal,
  agent: string,
  nowMs: number,
): MaybePromise<AgentAdmission> {
  const denied = checkAgent(policy, principal, agent);
  if (denied !== null) return { ok: false, refusal: denied };
  if (principal.keyId === null) return ADMITTED_FREELY;
  const scopes = principal.grant?.agentScopes ?? policy.agentScopesByKey.get(principal.keyId);
  if (scopes === undefined || scopes.every((s) => s.limits.rpm === undefined && s.limits.tokensPerDay === undefined))
    return ADMITTED_FREELY;
  const reserved = store.reserve({ scopes, tokens: 1, costMicroUsd: 0, nowMs });
  const decide = (r: Awaited<typeof reserved>): AgentAdmission =>
    r.ok ? { ok: true, reservation: r.reservation, rateLimit: r.rateLimit } : { ok: false, refusal: asAgentRefusal(r.refusal) };
  return reserved instanceof Promise ? reserved.then(decide) : decide(reserved);
}

/** The store's refusal in agent words: the scope's own id, and the daily quota named as messages to agents. */
function asAgentRefusal(refusal: Refusal): Refusal {
  const scope = refusal.scope === null ? null : { kind: refusal.scope.kind, id: refusal.scope.id.replace(/\/agents$/, '') };
  const who = scope === null ? '' : `${scopeWho(scope.kind, scope.id)} `;
  let message = refusal.message.replace(/"([^"]*)\/agents"/, '"$1"');
  let limit: LimitKind | null = refusal.limit;
  if (refusal.limit === 'tokens_per_day') {
    message = `${who}has used its quota of messages to agents for this UTC day`;
    limit = 'agent_messages_per_day';
  } else if (refusal.limit === 'rpm') message = `${who}is over its limit of messages to agents per minute (rpm)`;
  return { ...refusal, message, scope, limit };
}

/** After the call: counted when it reached an agent (settle), given back when it reached none (release). */
export function finishAgentMessage(
  store: GovernanceStore,
  reservation: Reservation | null,
  reached: boolean,
  nowMs: number,
): MaybePromise<void> {
  if (reservation === null) return;
  return reached ? store.settle(reservation, { tokens: 1, costMicroUsd: 0 }, nowMs) : store.release(reservation, nowMs);
}
