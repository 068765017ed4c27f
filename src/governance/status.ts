import type { Scope } from './limits.js';
import type { GovernancePolicy } from './policy.js';
import type { GovernanceStore, ScopeStatus } from './store.js';

export interface GovernanceStatus {
  readonly teams: Readonly<Record<string, ScopeStatus>>;
  readonly keys: Readonly<Record<string, ScopeStatus & { readonly team: string }>>;
}

/**
 * Per team and key of the policy: requests this minute, tokens today, spend this month,
 * each against its limit (for /admin/status). One store call for all of them. Holds no
 * secret: key ids only.
 */
export async function governanceStatus(store: GovernanceStore, policy: GovernancePolicy, nowMs: number): Promise<GovernanceStatus> {
  const scopes: Scope[] = [];
  for (const [id, t] of policy.teams) scopes.push({ kind: 'team', id, team: id, limits: t.record.limits });
  for (const [id, k] of policy.keys.byId) scopes.push({ kind: 'key', id, team: k.team, limits: k.limits });
  const statuses = await store.status(scopes, nowMs);
  const teams: Record<string, ScopeStatus> = {};
  const keys: Record<string, ScopeStatus & { team: string }> = {};
  statuses.forEach((s, i) => {
    const scope = scopes[i] as Scope;
    if (s.kind === 'team') teams[s.id] = s;
    else keys[s.id] = { ...s, team: scope.team };
  });
  return { teams, keys };
}
