import { hash } from 'node:crypto';
import { LayeredMap } from './layered-map.js';
import type { Limits, Principal, Refusal } from './limits.js';
import { NO_RATE_LIMIT } from './limits.js';

/** One API key as governance needs it; server/ adapts the config's `keys` entries to this. */
export interface KeyRecord {
  readonly id: string;
  readonly team: string;
  /** Lowercase hex SHA-256 of the key; two while a key is rotated. */
  readonly sha256: readonly string[];
  readonly limits: Limits;
  /** Globs over model names, within the team's; absent = the team's. */
  readonly allowedModels?: readonly string[];
  /** Globs over exposed tool names, within the team's; absent = the team's. */
  readonly allowedTools?: readonly string[];
  /** Globs over exposed agent names, within the team's; absent = the team's. */
  readonly allowedAgents?: readonly string[];
  /** Epoch ms; null = never expires. */
  readonly expiresAtMs: number | null;
  /**
   * A digest that stops working before the key does (epoch ms), by digest: the old secret
   * of a key rotated with a grace period. The table needs no rebuild when the grace ends.
   */
  readonly digestUntilMs?: Readonly<Record<string, number>>;
}

/** The keys of one generation, indexed by digest. Built once per generation, then read-only. */
export interface KeyTable {
  /** No keys configured: an open gateway, every caller is anonymous. */
  readonly open: boolean;
  readonly byDigest: ReadonlyMap<string, KeyEntry>;
  readonly byId: ReadonlyMap<string, KeyRecord>;
}

export const ANONYMOUS: Principal = Object.freeze({ keyId: null, team: null });

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Lowercase hex SHA-256 of a presented key: what config stores instead of the key. */
export function hashKey(presented: string): string {
  // The one-shot hash: a third of createHash's cost, paid on every governed request.
  return hash('sha256', presented, 'hex');
}

export function buildKeyTable(records: readonly KeyRecord[]): KeyTable {
  return addKeys(new Map(), new Map(), records);
}

/** `base` and more keys: its maps copied (not its entries compiled again), with the same refusals. */
export function extendKeyTable(base: KeyTable, records: readonly KeyRecord[]): KeyTable {
  if (records.length === 0) return base;
  const added = addKeys(new Map(), new Map(), records, base);
  return { open: false, byDigest: new LayeredMap(added.byDigest, base.byDigest), byId: new LayeredMap(added.byId, base.byId) };
}

function addKeys(
  byDigest: Map<string, KeyEntry>,
  byId: Map<string, KeyRecord>,
  records: readonly KeyRecord[],
  base: KeyTable | null = null,
): KeyTable {
  for (const record of records) {
    if (byId.has(record.id) || base?.byId.has(record.id) === true) throw new Error(`duplicate key id "${record.id}"`);
    byId.set(record.id, record);
    for (const hex of record.sha256) {
      const lower = hex.toLowerCase();
      if (!SHA256_HEX.test(lower)) throw new Error(`key "${record.id}": sha256 must be 64 hex digits`);
      // Two ids with one digest would make the caller ambiguous: refuse rather than pick one.
      const other = byDigest.get(lower) ?? base?.byDigest.get(lower);
      if (other !== undefined && other.record.id !== record.id)
        throw new Error(`keys "${other.record.id}" and "${record.id}" share a sha256`);
      const untilMs = record.digestUntilMs?.[lower] ?? null;
      byDigest.set(lower, { record, principal: Object.freeze({ keyId: record.id, team: record.team }), untilMs });
    }
  }
  return { open: byId.size === 0, byDigest, byId };
}

type HeaderValue = string | string[] | undefined;

/** The token of `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 9110 11.1). */
export function bearerToken(authorization: HeaderValue): string | null {
  if (typeof authorization !== 'string') return null;
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
  return m === null ? null : (m[1] as string);
}

/**
 * The key a request presents: `Authorization: Bearer <key>` (scheme case-insensitive), else
 * `x-api-key` (Anthropic clients). Headers as node:http gives them (lower-case names).
 */
export function presentedKey(headers: Readonly<Record<string, HeaderValue>>): string | null {
  const bearer = bearerToken(headers.authorization);
  if (bearer !== null) return bearer;
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.trim() !== '') return apiKey.trim();
  return null;
}

type KeyEntry = { readonly record: KeyRecord; readonly principal: Principal; readonly untilMs: number | null };

/**
 * The last key one connection presented and what it resolved to in one key table, so that
 * the requests of a keep-alive connection pay for the key's SHA-256 once (the hash was an
 * eighth of governance's cost per request in the governance-overhead bench). Only a key that resolved is kept; a
 * reload's new table, or another key, resolves afresh. The presented key is compared with
 * the kept one in constant time, as the digest lookup would be.
 */
export class KeyMemo {
  table: KeyTable | null = null;
  presented = '';
  entry: KeyEntry | null = null;
}

/** Equal strings, compared without stopping at the first difference (lengths are not secret). */
function sameKey(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

function lookUp(table: KeyTable, presented: string, memo: KeyMemo | undefined): KeyEntry | undefined {
  if (memo !== undefined && memo.table === table && memo.entry !== null && sameKey(memo.presented, presented)) return memo.entry;
  // The lookup is the comparison, and it is made on the digest: its timing depends on a
  // value the caller cannot steer toward a stored digest without a preimage.
  const entry = table.byDigest.get(hashKey(presented));
  if (entry !== undefined && memo !== undefined) {
    memo.table = table;
    memo.presented = presented;
    memo.entry = entry;
  }
  return entry;
}

export type AuthResult =
  | { readonly ok: true; readonly principal: Principal; readonly key: KeyRecord | null }
  | { readonly ok: false; readonly refusal: Refusal };

/**
 * The caller, from the headers alone, before any body is read. The table is indexed by the
 * SHA-256 of the key, so the lookup's timing depends only on a digest the caller cannot
 * steer toward a stored one (that would take a preimage), so a hit is the comparison.
 * Messages never echo the presented key.
 */
export function authenticate(table: KeyTable, headers: Readonly<Record<string, HeaderValue>>, nowMs: number, memo?: KeyMemo): AuthResult {
  if (table.open) return { ok: true, principal: ANONYMOUS, key: null };
  const presented = presentedKey(headers);
  if (presented === null) return refuse('unauthorized', 'missing API key: send Authorization: Bearer <key> or x-api-key');
  const entry = lookUp(table, presented, memo);
  if (entry === undefined) return refuse('unauthorized', 'invalid API key');
  const { record } = entry;
  if (entry.untilMs !== null && nowMs >= entry.untilMs) return refuse('unauthorized', 'invalid API key (it was rotated)');
  if (record.expiresAtMs !== null && nowMs >= record.expiresAtMs) {
    return refuse('key_expired', `API key "${record.id}" expired at ${new Date(record.expiresAtMs).toISOString()}`);
  }
  return { ok: true, principal: entry.principal, key: record };
}

function refuse(code: 'unauthorized' | 'key_expired', message: string): AuthResult {
  return { ok: false, refusal: { code, message, retryAfterS: null, scope: null, limit: null, rateLimit: NO_RATE_LIMIT } };
}
