import type { Principal, Refusal, ScopeKind } from './limits.js';
import { NO_RATE_LIMIT } from './limits.js';
import { type GovernancePolicy, ownerOf, ownList } from './policy.js';
import { admitSideCall, finishSideCall, type SideAdmission, type SideCall } from './side-calls.js';
import type { GovernanceStore, MaybePromise } from './store.js';

// Governance of the /a2a endpoints: the allow-lists (allowed_agents), and a message to an
// agent (SendMessage, SendStreamingMessage and their 0.3 names) counted in the team's and
// key's agent counters (`<id>/agents`: rpm in a window of its own, agent_messages_per_day;
// side-calls.ts). Reads (a task, a card, a list) count nothing.

export type AgentAdmission = SideAdmission;

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

const AGENT_MESSAGES: SideCall = Object.freeze({ suffix: '/agents', quota: 'agent_messages_per_day', counted: 'messages to agents' });

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
  const scopes = principal.keyId === null ? undefined : (principal.grant?.agentScopes ?? policy.agentScopesByKey.get(principal.keyId));
  return admitSideCall(store, AGENT_MESSAGES, principal, scopes, nowMs);
}

/** After the call: counted when it reached an agent (settle), given back when it reached none (release). */
export const finishAgentMessage = finishSideCall;
