import { buildGovernancePolicy, type GovernancePolicy, type KeyRecord, type TeamRecord } from '../governance/index.js';
import type { Generation } from '../live/index.js';

// The adapter between the generation (config, resolved key digests) and governance/'s own
// input types. governance/ never reads config, and live/ never imports governance/: the
// request path, which needs both, joins them here (and the reload compiles each new
// generation's policy through it before the swap).

const microUsd = (usd: number | undefined): number | undefined => (usd === undefined ? undefined : Math.round(usd * 1e6));

/** Config + resolved digests -> governance's policy. Budgets in USD become integer micro-USD. */
function policyInput(gen: Generation) {
  const config = gen.config;
  const teams: TeamRecord[] = Object.entries(config.teams ?? {}).map(([id, t]) => ({
    id,
    allowedModels: t.allowed_models,
    allowedTools: t.allowed_tools,
    limits: {
      rpm: t.rate_limit?.rpm,
      tpm: t.rate_limit?.tpm,
      tokensPerDay: t.quota?.tokens_per_day,
      toolCallsPerDay: t.quota?.tool_calls_per_day,
      budgetMicroUsdPerMonth: microUsd(t.budget?.usd_per_month),
      budgetOnExceeded: t.budget?.on_exceeded,
    },
  }));
  const keys: KeyRecord[] = (config.keys ?? []).map((k) => ({
    id: k.id,
    team: k.team,
    sha256: gen.keyDigests[k.id] ?? [],
    limits: {
      rpm: k.rpm,
      tpm: k.tpm,
      tokensPerDay: k.tokens_per_day,
      budgetMicroUsdPerMonth: microUsd(k.budget_usd_per_month),
      toolCallsPerDay: k.tool_calls_per_day,
    },
    allowedModels: k.allowed_models,
    allowedTools: k.allowed_tools,
    expiresAtMs: k.expires_at === undefined ? null : Date.parse(k.expires_at),
    ...(gen.keyDigestUntil[k.id] === undefined ? {} : { digestUntilMs: gen.keyDigestUntil[k.id] }),
  }));
  return {
    teams,
    keys,
    defaultMaxTokens: config.governance.default_max_tokens,
    onMissingPrice: config.pricing.on_missing ?? 'allow',
    capOutput: config.governance.cap_output,
  } as const;
}

const policies = new WeakMap<Generation, GovernancePolicy>();

/**
 * The governance policy of a generation: compiled once (at its swap, see Reloader), then
 * looked up in O(1). Keyed by the generation object, so a request can only ever see the
 * policy of the generation it captured.
 */
export function policyOf(gen: Generation): GovernancePolicy {
  let policy = policies.get(gen);
  if (policy === undefined) {
    policy = buildGovernancePolicy(policyInput(gen));
    policies.set(gen, policy);
  }
  return policy;
}
