import { isDeepStrictEqual } from 'node:util';
import { type ConfigIssue, type GatewayConfig, type KeyConfig, resolveSecret, type TeamConfig } from '../config/index.js';
import { sha256Hex } from '../contract/index.js';
import type { ManagedSnapshot } from '../database/index.js';
import { deepFreeze } from './generation.js';
import { mergeManaged } from './managed.js';

// The keyring: who may call, and within which limits. It changes far more often than the
// routes do (every admin write of a key or a team), so it is its own immutable snapshot with
// its own number and its own holder, beside the generation. A config-file reload builds both;
// a database change builds only this, from the serving keyring's file part and the new rows,
// in a few milliseconds whatever the number of routes. A request captures one generation and
// one keyring together, at admission, and uses that pair to the end.

/** The governance settings of the config file that the policy compiled from a keyring needs. */
export interface KeyringSettings {
  readonly defaultMaxTokens: number;
  readonly onMissingPrice: 'allow' | 'block';
  readonly capOutput: boolean;
}

export interface Keyring {
  readonly number: number;
  readonly builtAt: string;
  /** SHA-256 of the config bytes its file part was read from. */
  readonly sourceHash: string;
  /** Every team by id: the config file's, then the database's that are not skipped. */
  readonly teams: Readonly<Record<string, TeamConfig>>;
  /** Every key: the config file's, then the database's that are not skipped. */
  readonly keys: readonly KeyConfig[];
  /** The config file's own teams and keys (read-only to the admin API). */
  readonly fileTeams: Readonly<Record<string, TeamConfig>>;
  readonly fileKeys: readonly KeyConfig[];
  /** The digests of the file's keys, resolved when the file was read (a database change re-uses them). */
  readonly fileDigests: Readonly<Record<string, readonly string[]>>;
  /** Per key id: the SHA-256 digests that authenticate it (two while a rotation's grace runs). */
  readonly keyDigests: Readonly<Record<string, readonly string[]>>;
  /** Per key id, digests that stop working before the key does (a rotation's grace), epoch ms. */
  readonly keyDigestUntil: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** The database's teams and keys this keyring was built from; null without a database. */
  readonly managed: ManagedSnapshot | null;
  readonly settings: KeyringSettings;
}

export type KeyringResult =
  | { readonly ok: true; readonly keyring: Keyring; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/** The config file's part of a keyring: its teams, keys and settings, with its keys' secrets resolved. */
export interface KeyringFile {
  readonly sourceHash: string;
  readonly teams: Readonly<Record<string, TeamConfig>>;
  readonly keys: readonly KeyConfig[];
  readonly digests: Readonly<Record<string, readonly string[]>>;
  readonly settings: KeyringSettings;
}

/**
 * Reads the file's part of a keyring: keys given as a secret reference are resolved here,
 * like every secret, and only their SHA-256 is kept (a keyring never holds a caller's key
 * in clear). Issues name the key's path in the file.
 */
export function readKeyringFile(
  config: GatewayConfig,
  sourceHash: string,
  env: NodeJS.ProcessEnv,
): { file: KeyringFile; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  const digests = Object.create(null) as Record<string, readonly string[]>;
  for (const [i, k] of (config.keys ?? []).entries()) {
    if (k.sha256 !== undefined) digests[k.id] = k.sha256;
    else if (k.key !== undefined) {
      const secret = resolveSecret(k.key, env);
      if (!secret.ok) issues.push({ path: `keys[${i}].key`, message: secret.message });
      else digests[k.id] = [sha256Hex(secret.value)];
    }
  }
  // A key given by reference may resolve to another key's secret: two ids for one caller.
  const holders = new Map<string, string>();
  for (const [i, k] of (config.keys ?? []).entries()) {
    for (const digest of digests[k.id] ?? []) {
      const other = holders.get(digest);
      if (other !== undefined && other !== k.id)
        issues.push({ path: `keys[${i}]`, message: `key "${k.id}" has the same secret as key "${other}"` });
      else holders.set(digest, k.id);
    }
  }
  const settings: KeyringSettings = {
    defaultMaxTokens: config.governance.default_max_tokens,
    onMissingPrice: config.pricing.on_missing ?? 'allow',
    capOutput: config.governance.cap_output,
  };
  return { file: { sourceHash, teams: config.teams ?? {}, keys: config.keys ?? [], digests, settings }, issues };
}

/**
 * A keyring from the file's part and the database's rows: the rows the schema refuses, or
 * that clash with the file, are skipped with a warning (live/managed.ts), so one bad row
 * never stops every later change.
 */
export function buildKeyring(file: KeyringFile, managed: ManagedSnapshot | null, number: number, nowMs = Date.now()): Keyring {
  return assemble(file, managed, number, nowMs).keyring;
}

/** buildKeyring, with the warnings of the rows it skipped. */
export function assemble(
  file: KeyringFile,
  managed: ManagedSnapshot | null,
  number: number,
  nowMs = Date.now(),
): { keyring: Keyring; warnings: readonly string[] } {
  const merged = managed === null ? null : mergeManaged(file, managed, nowMs);
  const keys = merged?.keys ?? file.keys;
  const keyDigests = Object.create(null) as Record<string, readonly string[]>;
  for (const k of keys) {
    const digests = file.digests[k.id] ?? k.sha256;
    if (digests !== undefined) keyDigests[k.id] = digests;
  }
  const keyring: Keyring = {
    number,
    builtAt: new Date(nowMs).toISOString(),
    sourceHash: file.sourceHash,
    teams: merged?.teams ?? file.teams,
    keys,
    fileTeams: file.teams,
    fileKeys: file.keys,
    fileDigests: file.digests,
    keyDigests,
    keyDigestUntil: merged?.digestUntil ?? {},
    managed,
    settings: file.settings,
  };
  // The file's part is frozen already when it is re-used; freezing skips what is.
  return { keyring: deepFreeze(keyring), warnings: merged?.warnings ?? [] };
}

/** The file's part of a serving keyring, as a database change re-uses it. */
export function fileOf(keyring: Keyring): KeyringFile {
  return {
    sourceHash: keyring.sourceHash,
    teams: keyring.fileTeams,
    keys: keyring.fileKeys,
    digests: keyring.fileDigests,
    settings: keyring.settings,
  };
}

/** Teams and keys (by id, never a secret) that came, went and changed from one keyring to the next. */
export interface KeyringChanges {
  readonly teamsAdded: readonly string[];
  readonly teamsRemoved: readonly string[];
  readonly teamsChanged: readonly string[];
  readonly keysAdded: readonly string[];
  readonly keysRemoved: readonly string[];
  /** Limits, models, expiry or secret changed (a rotation, a revoke that keeps the record). */
  readonly keysChanged: readonly string[];
}

export function diffKeyrings(previous: Keyring | null, next: Keyring): KeyringChanges {
  const teams = named(previous?.teams ?? {}, next.teams);
  const keys = named(byId(previous?.keys ?? []), byId(next.keys));
  return {
    teamsAdded: teams.added,
    teamsRemoved: teams.removed,
    teamsChanged: teams.changed,
    keysAdded: keys.added,
    keysRemoved: keys.removed,
    keysChanged: keys.changed,
  };
}

function named(before: Readonly<Record<string, unknown>>, after: Readonly<Record<string, unknown>>) {
  const added: string[] = [];
  const changed: string[] = [];
  for (const [name, value] of Object.entries(after)) {
    if (!Object.hasOwn(before, name)) added.push(name);
    else if (before[name] !== value && !isDeepStrictEqual(before[name], value)) changed.push(name);
  }
  const removed = Object.keys(before).filter((name) => !Object.hasOwn(after, name));
  return { added, removed, changed };
}

function byId(keys: ReadonlyArray<{ readonly id: string }>): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  for (const k of keys) out[k.id] = k;
  return out;
}

/**
 * The one reference to the serving keyring: a plain field, swapped between requests'
 * synchronous steps, like the generation's holder (holder.ts).
 */
export class KeyringHolder {
  #current: Keyring | null = null;

  /** The serving keyring. Throws before the first swap. */
  current(): Keyring {
    const keyring = this.#current;
    if (keyring === null) throw new Error('no keyring is serving yet');
    return keyring;
  }

  get ready(): boolean {
    return this.#current !== null;
  }

  swap(next: Keyring): Keyring | null {
    const previous = this.#current;
    this.#current = next;
    return previous;
  }
}
