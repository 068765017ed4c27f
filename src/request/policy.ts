import { buildGovernancePolicy, type GovernancePolicy, type KeyRecord, type TeamRecord } from '../governance/index.js';
import type { Keyring } from '../live/index.js';

// The adapter between the keyring (teams, keys, resolved key digests) and governance/'s own
// input types. governance/ never reads config, and live/ never imports governance/: the
// request path, which needs both, joins them here (and the reload compiles each new
// keyring's policy through it before the swap).

const microUsd = (usd: number | undefined): number | undefined => (usd === undefined ? undefined : Math.round(usd * 1e6));

/** Teams, keys and resolved digests -> governance's policy. Budgets in USD become integer micro-USD. */
function policyInput(keyring: Keyring) {
  const teams: TeamRecord[] = Object.entries(keyring.teams).map(([id, t]) => ({
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
  const keys: KeyRecord[] = keyring.keys.map((k) => ({
    id: k.id,
    team: k.team,
    sha256: keyring.keyDigests[k.id] ?? [],
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
    ...(keyring.keyDigestUntil[k.id] === undefined ? {} : { digestUntilMs: keyring.keyDigestUntil[k.id] }),
  }));
  return {
    teams,
    keys,
    defaultMaxTokens: keyring.settings.defaultMaxTokens,
    onMissingPrice: keyring.settings.onMissingPrice,
    capOutput: keyring.settings.capOutput,
  } as const;
}

const policies = new WeakMap<Keyring, GovernancePolicy>();

/**
 * The governance policy of a keyring: compiled once (before its swap, see Reloader), then
 * looked up in O(1). Keyed by the keyring object, so a request can only ever see the
 * policy of the keyring it captured.
 */
export function policyOf(keyring: Keyring): GovernancePolicy {
  let policy = policies.get(keyring);
  if (policy === undefined) {
    policy = buildGovernancePolicy(policyInput(keyring));
    policies.set(keyring, policy);
  }
  return policy;
}
