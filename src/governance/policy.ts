import { compileModelAllowList, type ModelAllowList } from './allow-list.js';
import { buildKeyTable, extendKeyTable, type KeyRecord, type KeyTable } from './keys.js';
import { LayeredMap } from './layered-map.js';
import type { Limits, Principal, Refusal, Scope, ScopeKind } from './limits.js';
import { NO_RATE_LIMIT } from './limits.js';
import type { OnMissingPrice } from './pricing.js';

/** One team as governance needs it; server/ adapts the config's `teams` entries to this. */
export interface TeamRecord {
  readonly id: string;
  /** Globs; absent = every model. */
  readonly allowedModels?: readonly string[];
  /** Globs over exposed tool names; absent = every tool. */
  readonly allowedTools?: readonly string[];
  /** Globs over exposed agent names; absent = every agent. */
  readonly allowedAgents?: readonly string[];
  readonly limits: Limits;
}

export interface PolicyInput {
  readonly teams: readonly TeamRecord[];
  readonly keys: readonly KeyRecord[];
  /** The output reserved when a request gives no max_tokens. */
  readonly defaultMaxTokens: number;
  readonly onMissingPrice: OnMissingPrice;
  /** Send the reserved output cap upstream when a limit applies and the request gives none (default true). */
  readonly capOutput?: boolean;
}

interface CompiledTeam {
  readonly record: TeamRecord;
  readonly allows: ModelAllowList;
  readonly allowsTool: ModelAllowList;
  readonly allowsAgent: ModelAllowList;
}

/**
 * Everything governance reads from one generation: keys, teams, their limits and
 * allow-lists, compiled once. Immutable; a reload builds a new one, while the counters
 * (in the store) stay, because they are keyed by team and key id.
 */
export interface GovernancePolicy {
  readonly keys: KeyTable;
  readonly teams: ReadonlyMap<string, CompiledTeam>;
  readonly defaultMaxTokens: number;
  readonly onMissingPrice: OnMissingPrice;
  readonly capOutput: boolean;
  /**
   * Each key's scopes (its team, then itself), built once: the same objects every request,
   * so a store can find their counters by identity.
   */
  readonly scopesByKey: ReadonlyMap<string, readonly Scope[]>;
  /** The same for tools/call: the tool-call counters of the team, then the key (tool-calls.ts). */
  readonly toolScopesByKey: ReadonlyMap<string, readonly Scope[]>;
  /** Each key's own allowed_tools, compiled; a key without one has no entry. */
  readonly keyToolAllows: ReadonlyMap<string, ModelAllowList>;
  /** The same for messages to agents: the agent counters of the team, then the key (agent-messages.ts). */
  readonly agentScopesByKey: ReadonlyMap<string, readonly Scope[]>;
  /** Each key's own allowed_agents, compiled; a key without one has no entry. */
  readonly keyAgentAllows: ReadonlyMap<string, ModelAllowList>;
  /** Each key's own allowed_models, compiled; a key without one has no entry. */
  readonly keyModelAllows: ReadonlyMap<string, ModelAllowList>;
}

export function buildGovernancePolicy(input: PolicyInput): GovernancePolicy {
  const teams = new Map<string, CompiledTeam>();
  for (const t of input.teams) teams.set(t.id, compileTeam(t));
  for (const k of input.keys) if (!teams.has(k.team)) throw new Error(`key "${k.id}" names unknown team "${k.team}"`);
  const teamScopes = new Map<string, Scope>();
  for (const t of input.teams) teamScopes.set(t.id, Object.freeze({ kind: 'team', id: t.id, team: t.id, limits: t.limits }));
  return finish(input, teams, teamScopes, new Map(), emptyKeyMaps(), buildKeyTable(input.keys), input.keys);
}

function compileTeam(t: TeamRecord): CompiledTeam {
  return Object.freeze({
    record: t,
    allows: compileModelAllowList(t.allowedModels),
    allowsTool: compileModelAllowList(t.allowedTools),
    allowsAgent: compileModelAllowList(t.allowedAgents),
  });
}

/** What each key adds to a policy besides its model scopes: its tool and agent counters and its own lists. */
interface KeyMaps {
  readonly toolScopesByKey: Map<string, readonly Scope[]>;
  readonly keyToolAllows: Map<string, ModelAllowList>;
  readonly keyModelAllows: Map<string, ModelAllowList>;
  readonly agentScopesByKey: Map<string, readonly Scope[]>;
  readonly keyAgentAllows: Map<string, ModelAllowList>;
}

function emptyKeyMaps(): KeyMaps {
  return {
    toolScopesByKey: new Map(),
    keyToolAllows: new Map(),
    keyModelAllows: new Map(),
    agentScopesByKey: new Map(),
    keyAgentAllows: new Map(),
  };
}

/** Each policy's team scopes, so that an extension gives a base team's keys the very same scope object. */
const teamScopesOf = new WeakMap<GovernancePolicy, ReadonlyMap<string, Scope>>();

/**
 * `base` with more teams and keys (the database's, beside the config file's): the base's
 * compiled entries are shared, not compiled again, so a policy of ten thousand file keys and
 * a few database ones costs what the few cost, plus copying the maps. The same refusals as
 * buildGovernancePolicy: an unknown team, a duplicate id or a shared digest.
 */
export function extendGovernancePolicy(
  base: GovernancePolicy,
  extra: { readonly teams: readonly TeamRecord[]; readonly keys: readonly KeyRecord[] },
): GovernancePolicy {
  if (extra.teams.length === 0 && extra.keys.length === 0) return base;
  const teams = new Map<string, CompiledTeam>();
  const baseTeamScopes = teamScopesOf.get(base) ?? new Map<string, Scope>();
  const teamScopes = new Map<string, Scope>();
  for (const t of extra.teams) {
    if (teams.has(t.id) || base.teams.has(t.id)) throw new Error(`duplicate team id "${t.id}"`);
    teams.set(t.id, compileTeam(t));
    teamScopes.set(t.id, Object.freeze({ kind: 'team', id: t.id, team: t.id, limits: t.limits }));
  }
  const allTeams = new LayeredMap(teams, base.teams);
  for (const k of extra.keys) if (!allTeams.has(k.team)) throw new Error(`key "${k.id}" names unknown team "${k.team}"`);
  const scopesByKey = new Map<string, readonly Scope[]>();
  const maps = emptyKeyMaps();
  const keys = extendKeyTable(base.keys, extra.keys);
  const allScopes = new LayeredMap(teamScopes, baseTeamScopes);
  compileKeys(extra.keys, allTeams, allScopes, scopesByKey, maps);
  const policy: GovernancePolicy = Object.freeze({
    toolScopesByKey: new LayeredMap(maps.toolScopesByKey, base.toolScopesByKey),
    keyToolAllows: new LayeredMap(maps.keyToolAllows, base.keyToolAllows),
    keyModelAllows: new LayeredMap(maps.keyModelAllows, base.keyModelAllows),
    agentScopesByKey: new LayeredMap(maps.agentScopesByKey, base.agentScopesByKey),
    keyAgentAllows: new LayeredMap(maps.keyAgentAllows, base.keyAgentAllows),
    keys,
    teams: allTeams,
    defaultMaxTokens: base.defaultMaxTokens,
    onMissingPrice: base.onMissingPrice,
    capOutput: base.capOutput,
    scopesByKey: new LayeredMap(scopesByKey, base.scopesByKey),
  });
  teamScopesOf.set(policy, allScopes);
  return policy;
}

function compileKeys(
  added: readonly KeyRecord[],
  teams: ReadonlyMap<string, CompiledTeam>,
  teamScopes: ReadonlyMap<string, Scope>,
  scopesByKey: Map<string, readonly Scope[]>,
  maps: KeyMaps,
): void {
  for (const k of added) {
    const keyScope: Scope = Object.freeze({ kind: 'key', id: k.id, team: k.team, limits: k.limits });
    scopesByKey.set(k.id, Object.freeze([teamScopes.get(k.team) as Scope, keyScope]));
  }
  for (const k of added) {
    const team = (teams.get(k.team) as CompiledTeam).record;
    maps.toolScopesByKey.set(
      k.id,
      Object.freeze([toolScope('team', team.id, team.id, team.limits), toolScope('key', k.id, k.team, k.limits)]),
    );
    maps.agentScopesByKey.set(
      k.id,
      Object.freeze([agentScope('team', team.id, team.id, team.limits), agentScope('key', k.id, k.team, k.limits)]),
    );
    if (k.allowedTools !== undefined) maps.keyToolAllows.set(k.id, compileModelAllowList(k.allowedTools));
    if (k.allowedModels !== undefined) maps.keyModelAllows.set(k.id, compileModelAllowList(k.allowedModels));
    if (k.allowedAgents !== undefined) maps.keyAgentAllows.set(k.id, compileModelAllowList(k.allowedAgents));
  }
}

function finish(
  input: Pick<PolicyInput, 'defaultMaxTokens' | 'onMissingPrice' | 'capOutput'>,
  teams: Map<string, CompiledTeam>,
  teamScopes: Map<string, Scope>,
  scopesByKey: Map<string, readonly Scope[]>,
  maps: KeyMaps,
  keys: KeyTable,
  added: readonly KeyRecord[],
): GovernancePolicy {
  compileKeys(added, teams, teamScopes, scopesByKey, maps);
  const policy: GovernancePolicy = Object.freeze({
    toolScopesByKey: maps.toolScopesByKey,
    keyToolAllows: maps.keyToolAllows,
    keyModelAllows: maps.keyModelAllows,
    agentScopesByKey: maps.agentScopesByKey,
    keyAgentAllows: maps.keyAgentAllows,
    keys,
    teams,
    defaultMaxTokens: input.defaultMaxTokens,
    onMissingPrice: input.onMissingPrice,
    capOutput: input.capOutput ?? true,
    scopesByKey,
  });
  teamScopesOf.set(policy, teamScopes);
  return policy;
}

/** The scopes a principal's request is counted against: its team, then its key. Anonymous: none. */
export function scopesOf(policy: GovernancePolicy, principal: Principal): readonly Scope[] {
  if (principal.team === null) return [];
  if (principal.grant !== undefined) return principal.grant.scopes;
  if (principal.keyId !== null) {
    const built = policy.scopesByKey.get(principal.keyId);
    if (built !== undefined) return built;
  }
  const team = policy.teams.get(principal.team);
  const scopes: Scope[] = [{ kind: 'team', id: principal.team, team: principal.team, limits: team?.record.limits ?? {} }];
  if (principal.keyId !== null) {
    const key = policy.keys.byId.get(principal.keyId);
    scopes.push({ kind: 'key', id: principal.keyId, team: principal.team, limits: key?.limits ?? {} });
  }
  return scopes;
}

/** `model_not_allowed` when the principal's team, or its key, may not call `model`; null when it may. */
export function checkModel(policy: GovernancePolicy, principal: Principal, model: string): Refusal | null {
  if (principal.team === null) return null;
  const team = policy.teams.get(principal.team);
  if (team !== undefined && !team.allows(model)) return modelRefusal('team', principal.team, `team "${principal.team}"`, model);
  const own = ownList(policy, principal, 'models');
  if (own !== null && !own(model)) return modelRefusal('key', principal.keyId as string, ownerOf(principal), model);
  return null;
}

/**
 * The caller's own list of models or tools within its team's: a key's `allowed_models` /
 * `allowed_tools`, or what a signed-in principal's token scopes allow; null = the team's.
 */
export function ownList(policy: GovernancePolicy, principal: Principal, of: 'models' | 'tools' | 'agents'): ModelAllowList | null {
  // A token's scopes name models and tools; its agents are its team's.
  if (principal.grant !== undefined) return of === 'models' ? principal.grant.models : of === 'tools' ? principal.grant.tools : null;
  if (principal.keyId === null) return null;
  const lists = of === 'models' ? policy.keyModelAllows : of === 'tools' ? policy.keyToolAllows : policy.keyAgentAllows;
  return lists.get(principal.keyId) ?? null;
}

/** Who a refusal by the caller's own list names: its key, or its principal and why. */
export function ownerOf(principal: Principal): string {
  return principal.grant !== undefined ? `principal "${principal.keyId}" (by its token's scopes)` : `key "${principal.keyId}"`;
}

/**
 * A signed-in principal's scopes in `policy`: its team's scope object (the one the team's
 * keys share, so the team's counters are found by identity), then its own; and the same
 * pair for tools/call. Null when the team is not in the policy.
 */
export function principalScopes(
  policy: GovernancePolicy,
  team: string,
  id: string,
  limits: Limits,
): { readonly scopes: readonly Scope[]; readonly toolScopes: readonly Scope[]; readonly agentScopes: readonly Scope[] } | null {
  const compiled = policy.teams.get(team);
  if (compiled === undefined) return null;
  const teamScope = teamScopesOf.get(policy)?.get(team) ?? Object.freeze({ kind: 'team', id: team, team, limits: compiled.record.limits });
  const own: Scope = Object.freeze({ kind: 'key', id, team, limits });
  return {
    scopes: Object.freeze([teamScope, own]),
    toolScopes: Object.freeze([toolScope('team', team, team, compiled.record.limits), toolScope('key', id, team, limits)]),
    agentScopes: Object.freeze([agentScope('team', team, team, compiled.record.limits), agentScope('key', id, team, limits)]),
  };
}

function modelRefusal(kind: ScopeKind, id: string, who: string, model: string): Refusal {
  return {
    code: 'model_not_allowed',
    message: `${who} may not use model "${model}"`,
    retryAfterS: null,
    scope: { kind, id },
    limit: null,
    rateLimit: NO_RATE_LIMIT,
  };
}

/** tools/call counters live under the team's or key's id with this suffix (see tool-calls.ts). */
const TOOL_SCOPE_SUFFIX = '/tools';

/** The tool-call counters of one team or key, with only the limits that apply to tools. */
export function toolScope(kind: ScopeKind, id: string, team: string, limits: Limits): Scope {
  const toolLimits: { rpm?: number; tokensPerDay?: number } = {};
  if (limits.rpm !== undefined) toolLimits.rpm = limits.rpm;
  if (limits.toolCallsPerDay !== undefined) toolLimits.tokensPerDay = limits.toolCallsPerDay;
  return Object.freeze({ kind, id: `${id}${TOOL_SCOPE_SUFFIX}`, team, limits: Object.freeze(toolLimits) });
}

/** Messages to agents are counted under the team's or key's id with this suffix (see agent-messages.ts). */
const AGENT_SCOPE_SUFFIX = '/agents';

/** The agent-message counters of one team or key, with only the limits that apply to them (rpm, agent_messages_per_day). */
export function agentScope(kind: ScopeKind, id: string, team: string, limits: Limits): Scope {
  const agentLimits: { rpm?: number; tokensPerDay?: number } = {};
  if (limits.rpm !== undefined) agentLimits.rpm = limits.rpm;
  if (limits.agentMessagesPerDay !== undefined) agentLimits.tokensPerDay = limits.agentMessagesPerDay;
  return Object.freeze({ kind, id: `${id}${AGENT_SCOPE_SUFFIX}`, team, limits: Object.freeze(agentLimits) });
}
