import { checkKey, checkTeam, type KeyConfig, type TeamConfig } from '../config/index.js';
import type { ManagedSnapshot } from '../database/index.js';

// The database's teams and keys joined to the config file's, for one keyring. The file's
// entries win: the admin API refuses to write over them, and should the file later gain an
// id the database also holds, the file's is used and the database's skipped with a warning.
// A row the schema refuses (written by hand, or by a newer gateway) is skipped the same way,
// so one bad row never stops every later reload.

/** The config file's teams and keys, with the digests its keys resolved to (a key given by reference has no sha256). */
export interface FileTeamsAndKeys {
  readonly teams?: Readonly<Record<string, TeamConfig>> | undefined;
  readonly keys?: readonly KeyConfig[] | undefined;
  readonly digests?: Readonly<Record<string, readonly string[]>>;
  /**
   * The file's key ids and digests as sets, when the caller keeps them (a keyring's file
   * part): the join then costs what the database's rows cost, not what the file's keys do.
   */
  readonly index?: FileKeyIndex;
}

export interface FileKeyIndex {
  readonly ids: ReadonlySet<string>;
  readonly digests: ReadonlySet<string>;
}

/** The file's key ids and digests as sets (see FileTeamsAndKeys.index). */
export function indexFileKeys(keys: readonly KeyConfig[], digests: Readonly<Record<string, readonly string[]>>): FileKeyIndex {
  const ids = new Set<string>();
  const all = new Set<string>();
  for (const k of keys) {
    ids.add(k.id);
    for (const d of digests[k.id] ?? k.sha256 ?? []) all.add(d);
  }
  return { ids, digests: all };
}

export interface Merged {
  readonly teams: Readonly<Record<string, TeamConfig>>;
  /** The file's keys, then the database's that are joined (`added`). */
  readonly keys: readonly KeyConfig[];
  readonly added: readonly KeyConfig[];
  /** The database's teams that are joined. */
  readonly addedTeams: Readonly<Record<string, TeamConfig>>;
  /** Per key id, digests that stop working before the key does: a rotation's grace. */
  readonly digestUntil: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly warnings: readonly string[];
}

export function mergeManaged(config: FileTeamsAndKeys, snapshot: ManagedSnapshot, nowMs: number): Merged {
  if (snapshot.teams.length === 0 && snapshot.keys.length === 0)
    return { teams: config.teams ?? {}, keys: config.keys ?? [], added: [], addedTeams: {}, digestUntil: {}, warnings: [] };
  const warnings: string[] = [];
  const teams: Record<string, TeamConfig> = { ...(config.teams ?? {}) };
  const addedTeams: Record<string, TeamConfig> = {};
  for (const t of snapshot.teams) {
    if (config.teams?.[t.id] !== undefined) {
      warnings.push(`database team "${t.id}" is also in the config file: the file's is used`);
      continue;
    }
    const checked = checkTeam(t.spec);
    if (!checked.ok) {
      warnings.push(`database team "${t.id}" is skipped: ${checked.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
      continue;
    }
    teams[t.id] = checked.value;
    addedTeams[t.id] = checked.value;
  }
  const fileKeys = config.keys ?? [];
  const file = config.index ?? indexFileKeys(fileKeys, config.digests ?? {});
  // The database's own, beside the file's sets (which are shared, never written).
  const added: KeyConfig[] = [];
  const ids = new Set<string>();
  const digests = new Set<string>();
  const digestUntil: Record<string, Record<string, number>> = {};
  for (const k of snapshot.keys) {
    if (file.ids.has(k.id) || ids.has(k.id)) {
      warnings.push(`database key "${k.id}" is also in the config file: the file's is used`);
      continue;
    }
    if (teams[k.team] === undefined) {
      warnings.push(`database key "${k.id}" is skipped: its team "${k.team}" does not exist`);
      continue;
    }
    const untilMs = k.previous === null ? Number.NaN : Date.parse(k.previous.until);
    const inGrace = k.previous !== null && untilMs > nowMs;
    const sha256 = inGrace ? [k.sha256, (k.previous as { sha256: string }).sha256] : [k.sha256];
    if (sha256.some((d) => file.digests.has(d) || digests.has(d))) {
      warnings.push(`database key "${k.id}" is skipped: its secret's hash is another key's`);
      continue;
    }
    const checked = checkKey({ ...k.spec, id: k.id, team: k.team, sha256, ...(k.expiresAt === null ? {} : { expires_at: k.expiresAt }) });
    if (!checked.ok) {
      warnings.push(`database key "${k.id}" is skipped: ${checked.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
      continue;
    }
    added.push(checked.value);
    ids.add(k.id);
    for (const d of sha256) digests.add(d);
    if (inGrace) digestUntil[k.id] = { [(k.previous as { sha256: string }).sha256]: untilMs };
  }
  return { teams, keys: added.length === 0 ? fileKeys : fileKeys.concat(added), added, addedTeams, digestUntil, warnings };
}
