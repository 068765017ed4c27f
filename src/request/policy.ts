import type { KeyConfig, TeamConfig } from '../config/index.js';
import {
  buildGovernancePolicy,
  extendGovernancePolicy,
  type GovernancePolicy,
  type KeyRecord,
  type TeamRecord,
} from '../governance/index.js';
import type { Keyring, KeyringFile } from '../live/index.js';

// The adapter between the keyring (teams, keys, resolved key digests) and governance/'s own
// input types. governance/ never reads config, and live/ never imports governance/: the
// request path, which needs both, joins them here (and the reload compiles each new
// keyring's policy through it before the swap).

const microUsd = (usd: number | undefined): number | undefined => (usd === undefined ? undefined : Math.round(usd * 1e6));

function teamRecord(id: string, t: TeamConfig): TeamRecord {
  return {
    id,
    allowedModels: t.allowed_models,
    allowedTools: t.allowed_tools,
    allowedAgents: t.allowed_agents,
    limits: {
      rpm: t.rate_limit?.rpm,
      tpm: t.rate_limit?.tpm,
      tokensPerDay: t.quota?.tokens_per_day,
      toolCallsPerDay: t.quota?.tool_calls_per_day,
      agentMessagesPerDay: t.quota?.agent_messages_per_day,
      budgetMicroUsdPerMonth: microUsd(t.budget?.usd_per_month),
      budgetOnExceeded: t.budget?.on_exceeded,
    },
  };
}

function keyRecord(k: KeyConfig, sha256: readonly string[], digestUntil: Readonly<Record<string, number>> | undefined): KeyRecord {
  return {
    id: k.id,
    team: k.team,
    sha256,
    limits: {
      rpm: k.rpm,
      tpm: k.tpm,
      tokensPerDay: k.tokens_per_day,
      budgetMicroUsdPerMonth: microUsd(k.budget_usd_per_month),
      toolCallsPerDay: k.tool_calls_per_day,
      agentMessagesPerDay: k.agent_messages_per_day,
    },
    allowedModels: k.allowed_models,
    allowedTools: k.allowed_tools,
    allowedAgents: k.allowed_agents,
    expiresAtMs: k.expires_at === undefined ? null : Date.parse(k.expires_at),
    ...(digestUntil === undefined ? {} : { digestUntilMs: digestUntil }),
  };
}

/** The config file's teams and keys (with the digests its keys resolved to) -> governance's policy. */
function filePolicy(file: KeyringFile): GovernancePolicy {
  let policy = filePolicies.get(file);
  if (policy === undefined) {
    policy = buildGovernancePolicy({
      teams: Object.entries(file.teams).map(([id, t]) => teamRecord(id, t)),
      keys: file.keys.map((k) => keyRecord(k, file.digests[k.id] ?? [], undefined)),
      defaultMaxTokens: file.settings.defaultMaxTokens,
      onMissingPrice: file.settings.onMissingPrice,
      capOutput: file.settings.capOutput,
    });
    filePolicies.set(file, policy);
  }
  return policy;
}

/** Compiled once per config file read: every keyring of that file extends the same one. */
const filePolicies = new WeakMap<KeyringFile, GovernancePolicy>();

const policies = new WeakMap<Keyring, GovernancePolicy>();

/**
 * The governance policy of a keyring: compiled once (before its swap, see Reloader), then
 * looked up in O(1). Keyed by the keyring object, so a request can only ever see the
 * policy of the keyring it captured. The file's part is compiled once per file, and a
 * keyring adds the database's teams and keys to it: a key write compiles one key, not the
 * file's ten thousand.
 */
export function policyOf(keyring: Keyring): GovernancePolicy {
  let policy = policies.get(keyring);
  if (policy === undefined) {
    policy = extendGovernancePolicy(filePolicy(keyring.file), {
      teams: Object.entries(keyring.addedTeams).map(([id, t]) => teamRecord(id, t)),
      keys: keyring.addedKeys.map((k) => keyRecord(k, k.sha256 ?? [], keyring.keyDigestUntil[k.id])),
    });
    policies.set(keyring, policy);
  }
  return policy;
}
