import type { KeyConfig, TeamConfig } from '../config/index.js';
import { SwitchyardError } from '../errors.js';
import type { Principal } from '../governance/index.js';
import type { Keyring, KeyringFile } from '../live/index.js';
import type { ResidencyRule } from '../routing/index.js';

// The caller's residency rule (ADR 0043): its key's `residency` if it has one, else its
// team's; a signed-in caller (JWT) has its team's. Compiled once per keyring, like its
// governance policy (policy.ts): the file's part once per config file, and a keyring adds
// the database's teams and keys. A request then costs nothing when no team or key has a
// rule, and two map lookups when some do. The chain applies the rule (chain.ts).

interface ResidencyTable {
  /** A key's own rule, narrowed to its team's. */
  readonly byKey: ReadonlyMap<string, ResidencyRule>;
  readonly byTeam: ReadonlyMap<string, ResidencyRule>;
  /** True when neither map holds anything: the request path then looks nothing up. */
  readonly none: boolean;
}

function teamRule(t: TeamConfig | undefined): ResidencyRule | null {
  const r = t?.residency;
  return r === undefined ? null : Object.freeze({ allow: Object.freeze([...r.allow]), failClosed: r.fail_closed });
}

/**
 * A key's own rule, never wider than its team's: validation refuses a wider one, and a team
 * narrowed after its key was written still narrows the key here.
 */
function keyRule(k: KeyConfig, team: ResidencyRule | null): ResidencyRule | null {
  const r = k.residency;
  if (r === undefined) return null;
  const allow = team === null ? [...r.allow] : r.allow.filter((z) => team.allow.includes(z));
  return Object.freeze({ allow: Object.freeze(allow), failClosed: r.fail_closed || (team?.failClosed ?? false) });
}

function tableOf(
  teams: Readonly<Record<string, TeamConfig>>,
  keys: readonly KeyConfig[],
  teamOf: (id: string) => TeamConfig | undefined,
  base: ResidencyTable | null,
): ResidencyTable {
  const byTeam = new Map(base?.byTeam);
  const byKey = new Map(base?.byKey);
  for (const id of Object.keys(teams)) {
    const rule = teamRule(teams[id]);
    if (rule !== null) byTeam.set(id, rule);
  }
  for (const k of keys) {
    if (k.residency === undefined) continue;
    const rule = keyRule(k, teamRule(teamOf(k.team)));
    if (rule !== null) byKey.set(k.id, rule);
  }
  return Object.freeze({ byKey, byTeam, none: byKey.size === 0 && byTeam.size === 0 });
}

const fileTables = new WeakMap<KeyringFile, ResidencyTable>();
const tables = new WeakMap<Keyring, ResidencyTable>();

function fileTable(file: KeyringFile): ResidencyTable {
  let table = fileTables.get(file);
  if (table === undefined) {
    table = tableOf(file.teams, file.keys, (id) => file.teams[id], null);
    fileTables.set(file, table);
  }
  return table;
}

function keyringTable(keyring: Keyring): ResidencyTable {
  let table = tables.get(keyring);
  if (table === undefined) {
    const file = fileTable(keyring.file);
    const added = Object.keys(keyring.addedTeams).length > 0 || keyring.addedKeys.length > 0;
    table = added ? tableOf(keyring.addedTeams, keyring.addedKeys, (id) => keyring.teams[id], file) : file;
    tables.set(keyring, table);
  }
  return table;
}

/** The residency rule of the caller, by the keyring its request captured; null = no limit. */
export function residencyOf(keyring: Keyring, principal: Principal): ResidencyRule | null {
  const table = keyringTable(keyring);
  if (table.none) return null;
  if (principal.keyId !== null) {
    const own = table.byKey.get(principal.keyId);
    if (own !== undefined) return own;
  }
  return principal.team === null ? null : (table.byTeam.get(principal.team) ?? null);
}

/**
 * The 403 when no candidate lies within the caller's zones: it names the zones, never which
 * providers exist or where they are. `what` is the model, tool or agent asked for.
 */
export function residencyRefusal(what: string, rule: ResidencyRule): SwitchyardError {
  const zones = rule.allow.length === 0 ? 'none' : rule.allow.join(', ');
  return new SwitchyardError(
    'residency_not_allowed',
    `${what} has no candidate within the zones this caller's requests may reach (residency.allow: ${zones}); nothing was sent`,
  );
}

/** A tool's or an agent's fallback list as recent traffic counts it: the candidates tried, never one outside the caller's zones. */
export function triedCandidates(fallback: readonly string[], failedCandidates: readonly string[]): { candidate: string }[] {
  const out: { candidate: string }[] = [];
  fallback.forEach((f, i) => {
    if (!f.endsWith(':residency')) out.push({ candidate: failedCandidates[i] ?? f });
  });
  return out;
}
