import { isDeepStrictEqual } from 'node:util';
import { type ConfigIssue, type GatewayConfig, type KeyConfig, resolveSecret, type TeamConfig } from '../config/index.js';
import { sha256Hex } from '../contract/index.js';
import type { ManagedSnapshot } from '../database/index.js';
import { deepFreeze } from './generation.js';
import { type FileKeyIndex, indexFileKeys, mergeManaged } from './managed.js';

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
  /**
   * The file's part, read once per config file: every keyring built from the same file
   * shares this object, so what is compiled from it (request/policy.ts) is compiled once.
   */
  readonly file: KeyringFile;
  /** The database's teams and keys that are joined (each key's `sha256` holds its digests, two during a rotation's grace). */
  readonly addedTeams: Readonly<Record<string, TeamConfig>>;
  readonly addedKeys: readonly KeyConfig[];
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
  /** Per file key id, the digests that authenticate it, resolved when the file was read. */
  readonly digests: Readonly<Record<string, readonly string[]>>;
  readonly index: FileKeyIndex;
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
  const keys = config.keys ?? [];
  const file: KeyringFile = { sourceHash, teams: config.teams ?? {}, keys, digests, index: indexFileKeys(keys, digests), settings };
  return { file: Object.freeze(file), issues };
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
  const keyring: Keyring = {
    number,
    builtAt: new Date(nowMs).toISOString(),
    sourceHash: file.sourceHash,
    teams: merged?.teams ?? file.teams,
    keys: merged?.keys ?? file.keys,
    fileTeams: file.teams,
    fileKeys: file.keys,
    file,
    addedTeams: merged?.addedTeams ?? {},
    addedKeys: merged?.added ?? [],
    keyDigestUntil: merged?.digestUntil ?? {},
    managed,
    settings: file.settings,
  };
  // The database's part deeply; the file's part is the config's, frozen with its generation,
  // and the joined list only shallowly: walking ten thousand file keys again on every key
  // write would cost what the write is meant not to.
  deepFreeze([managed, keyring.addedTeams, keyring.addedKeys, keyring.keyDigestUntil, keyring.teams]);
  Object.freeze(keyring.keys);
  return { keyring: Object.freeze(keyring), warnings: merged?.warnings ?? [] };
}

/** The file's part of a serving keyring, as a database change re-uses it. */
export function fileOf(keyring: Keyring): KeyringFile {
  return keyring.file;
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
  // From the same file, only the database's part can differ: compared alone, it costs what it holds.
  const sameFile = previous !== null && previous.file === next.file;
  const teams = sameFile ? named(previous.addedTeams, next.addedTeams) : named(previous?.teams ?? {}, next.teams);
  const keys = sameFile ? named(byId(previous.addedKeys), byId(next.addedKeys)) : named(byId(previous?.keys ?? []), byId(next.keys));
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
