import type { Limits, Principal, RateLimitView, Refusal, Scope } from './limits.js';
import { NO_RATE_LIMIT } from './limits.js';
import { checkModel, type GovernancePolicy, scopesOf } from './policy.js';
import type { GovernanceStore, MaybePromise, ReserveResult } from './store.js';

// The admission of an answer from the response cache. A hit calls no upstream and costs
// nothing, so it reserves no tokens and no money: a team whose budget or token quota cannot
// cover a new request still gets its cached answers. It is still a request of its caller:
// the allow-lists apply (a key that may not use the model is refused, not served), and so
// does rpm, counted in the same window as every other model request of the team and key.

export type CachedAdmission = { readonly ok: true; readonly rateLimit: RateLimitView } | { readonly ok: false; readonly refusal: Refusal };

const ADMITTED: CachedAdmission = Object.freeze({ ok: true, rateLimit: NO_RATE_LIMIT });

/** Admits a cached answer of `model` to `principal`: the allow-lists, then rpm alone. */
export function admitCachedAnswer(
  store: GovernanceStore,
  policy: GovernancePolicy,
  principal: Principal,
  model: string,
  nowMs: number,
): MaybePromise<CachedAdmission> {
  const denied = checkModel(policy, principal, model);
  if (denied !== null) return { ok: false, refusal: denied };
  const scopes = rpmScopes(scopesOf(policy, principal));
  if (scopes.length === 0) return ADMITTED;
  const reserved = store.reserve({ scopes, tokens: 0, costMicroUsd: 0, nowMs });
  const decide = (r: ReserveResult): MaybePromise<CachedAdmission> => {
    if (!r.ok) return { ok: false, refusal: r.refusal };
    // Settled at once with nothing used: the request stays counted (rpm), nothing else moves.
    const settled = store.settle(r.reservation, { tokens: 0, costMicroUsd: 0 }, nowMs);
    const admitted: CachedAdmission = { ok: true, rateLimit: r.rateLimit };
    return settled instanceof Promise ? settled.then(() => admitted) : admitted;
  };
  return reserved instanceof Promise ? reserved.then(decide) : decide(reserved);
}

/** The scopes with an rpm, carrying that limit alone (the same ids: the same counters). */
function rpmScopes(scopes: readonly Scope[]): Scope[] {
  const out: Scope[] = [];
  for (const s of scopes) {
    if (s.limits.rpm === undefined) continue;
    const limits: Limits = { rpm: s.limits.rpm };
    out.push({ kind: s.kind, id: s.id, team: s.team, limits });
  }
  return out;
}
