import type { JwtConfig, PrincipalLimitsConfig } from '../config/index.js';
import {
  compileModelAllowList,
  type GovernancePolicy,
  type Limits,
  type ModelAllowList,
  NO_RATE_LIMIT,
  type Principal,
  principalScopes,
  type Refusal,
} from '../governance/index.js';
import type { Issuer, VerifiedToken } from './authority.js';
import { claimValues } from './token.js';

// A verified token's claims, read as the gateway's words: the team its calls belong to, the
// principal whose limits and ledger rows they are, the models and tools its scopes allow
// (within the team's, never more), and the admin role it holds. Pure functions of the token,
// the issuer's config and the keyring's policy.

export type Signed = { readonly ok: true; readonly principal: Principal } | { readonly ok: false; readonly refusal: Refusal };

/**
 * The principal a verified token signs in as under `policy`, or why it may not call the API:
 * 403 `forbidden` when its claims name no team (or one the keyring lacks), or name no
 * principal. Kept on the token per policy: a busy token maps once per keyring.
 */
export function signedInPrincipal(token: VerifiedToken, policy: GovernancePolicy, jwt: JwtConfig): Signed {
  const memo = token.memo;
  if (memo !== null && memo.of === policy) return memo.value as Signed;
  const value = mapPrincipal(token, policy, jwt);
  token.memo = { of: policy, value };
  return value;
}

function mapPrincipal(token: VerifiedToken, policy: GovernancePolicy, jwt: JwtConfig): Signed {
  const { issuer, claims } = token;
  const c = issuer.config;
  const team = teamOf(issuer, claims, policy);
  if (typeof team !== 'string') return team;
  const subject = claimValues(claims, c.principal.claim)[0];
  if (subject === undefined)
    return forbidden(`the token has no ${c.principal.claim} claim to name its principal (auth.jwt.issuers ${c.id}.principal)`);
  const id = `jwt:${issuer.id}:${subject}`;
  const built = principalScopes(policy, team, id, limitsOf(c.principals ?? jwt.principals));
  if (built === null) return forbidden(`the token maps to team ${JSON.stringify(team)}, which does not exist`);
  const scopeValues = c.scopes === undefined ? [] : claimValues(claims, c.scopes.claim, true);
  const principal: Principal = Object.freeze({
    keyId: id,
    team,
    grant: Object.freeze({
      ...built,
      models: c.scopes?.models === undefined ? null : allowedBy(c.scopes.models, scopeValues),
      tools: c.scopes?.tools === undefined ? null : allowedBy(c.scopes.tools, scopeValues),
    }),
  });
  return { ok: true, principal };
}

/** The team id, or the refusal: a value that names no team is refused, never given a default. */
function teamOf(issuer: Issuer, claims: Readonly<Record<string, unknown>>, policy: GovernancePolicy): string | Signed {
  const rule = issuer.config.team;
  if (rule === undefined)
    return forbidden(`issuer ${issuer.id} maps no team (auth.jwt.issuers ${issuer.id}.team): its tokens may not call the API`);
  const values = claimValues(claims, rule.claim);
  const teams = new Set<string>();
  if (rule.map === undefined) {
    for (const v of values) teams.add(v);
  } else {
    for (const v of values) {
      const mapped = Object.hasOwn(rule.map, v) ? rule.map[v] : undefined;
      if (mapped !== undefined) teams.add(mapped);
    }
  }
  if (teams.size === 0) {
    return forbidden(
      values.length === 0
        ? `the token has no ${rule.claim} claim to name its team`
        : `no value of the token's ${rule.claim} claim maps to a team (auth.jwt.issuers ${issuer.id}.team.map)`,
    );
  }
  if (teams.size > 1)
    return forbidden(
      `the token's ${rule.claim} claim maps to more than one team (${[...teams].join(', ')}): its calls would have no one owner`,
    );
  const team = [...teams][0] as string;
  if (!policy.teams.has(team)) return forbidden(`the token's ${rule.claim} claim names team ${JSON.stringify(team)}, which does not exist`);
  return team;
}

const allowLists = new Map<string, ModelAllowList>();

/** What the token's scopes allow: the union of the globs its scopes name; none named = nothing allowed. */
function allowedBy(table: Readonly<Record<string, readonly string[]>>, scopes: readonly string[]): ModelAllowList {
  const globs: string[] = [];
  for (const s of scopes) if (Object.hasOwn(table, s)) globs.push(...(table[s] as readonly string[]));
  const key = globs.join('\u0000');
  let allows = allowLists.get(key);
  if (allows === undefined) {
    allows = compileModelAllowList(globs);
    // Bounded by the distinct scope combinations the config can name; a hostile token names only configured scopes here.
    if (allowLists.size < 10_000) allowLists.set(key, allows);
  }
  return allows;
}

function limitsOf(c: PrincipalLimitsConfig): Limits {
  const limits: {
    rpm?: number;
    tpm?: number;
    tokensPerDay?: number;
    toolCallsPerDay?: number;
    budgetMicroUsdPerMonth?: number;
  } = {};
  if (c.rpm !== undefined) limits.rpm = c.rpm;
  if (c.tpm !== undefined) limits.tpm = c.tpm;
  if (c.tokens_per_day !== undefined) limits.tokensPerDay = c.tokens_per_day;
  if (c.tool_calls_per_day !== undefined) limits.toolCallsPerDay = c.tool_calls_per_day;
  if (c.budget_usd_per_month !== undefined) limits.budgetMicroUsdPerMonth = Math.round(c.budget_usd_per_month * 1e6);
  return Object.freeze(limits);
}

function forbidden(message: string): Signed {
  return { ok: false, refusal: { code: 'forbidden', message, retryAfterS: null, scope: null, limit: null, rateLimit: NO_RATE_LIMIT } };
}

/** The admin role a token's `roles` claim gives (admin, then read_only, then the first team:<id>), or null. */
export function adminRoleOf(token: VerifiedToken): string | null {
  const rule = token.issuer.config.roles;
  if (rule === undefined) return null;
  const roles = new Set<string>();
  for (const v of claimValues(token.claims, rule.claim, true)) {
    const role = Object.hasOwn(rule.map, v) ? rule.map[v] : undefined;
    if (role !== undefined) roles.add(role);
  }
  if (roles.has('admin')) return 'admin';
  if (roles.has('read_only')) return 'read_only';
  for (const r of roles) if (r.startsWith('team:')) return r;
  return null;
}

/** The principal id a token names (for admin callers and audit records), or null. */
export function principalIdOf(token: VerifiedToken): string | null {
  const subject = claimValues(token.claims, token.issuer.config.principal.claim)[0];
  return subject === undefined ? null : `jwt:${token.issuer.id}:${subject}`;
}
