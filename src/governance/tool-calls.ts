import type { Principal, Refusal, ScopeKind } from './limits.js';
import { NO_RATE_LIMIT } from './limits.js';
import { type GovernancePolicy, ownerOf, ownList } from './policy.js';
import { admitSideCall, finishSideCall, type SideAdmission, type SideCall } from './side-calls.js';
import type { GovernanceStore, MaybePromise } from './store.js';

// Governance of the /mcp endpoint's tools/call. A call is counted in counters of its own,
// beside each team's and key's model counters: the scope ids `<team>/tools` and
// `<key>/tools` (a `/` no team or key id may hold), under the same store and the same atomic
// reserve. Their rpm is the team's or key's rpm (so rpm limits tool calls, in a window apart
// from model requests, and initialize or tools/list count nothing), their daily quota is
// tool_calls_per_day (booked as one "token" a call), and nothing else: tpm and budgets do
// not apply to tools. A call that reached no server is given back (release); one that did
// stays counted (settle).

export type ToolAdmission = SideAdmission;

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

const TOOL_CALLS: SideCall = Object.freeze({ suffix: '/tools', quota: 'tool_calls_per_day', counted: 'tool calls' });

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
  const scopes = principal.keyId === null ? undefined : (principal.grant?.toolScopes ?? policy.toolScopesByKey.get(principal.keyId));
  return admitSideCall(store, TOOL_CALLS, principal, scopes, nowMs);
}

/** After the call: counted when it reached a server (settle), given back when it reached none (release). */
export const finishToolCall = finishSideCall;
