import { randomBytes } from 'node:crypto';
import { checkKey, checkTeam, type KeyConfig, widerResidency } from '../config/index.js';
import type { ManagedKey, ManagedRecords, WriteResult } from '../database/index.js';
import { SwitchyardError } from '../errors.js';
import { hashKey } from '../governance/index.js';
import type { Keyring } from '../live/index.js';
import { type AdminCaller, mayWrite, seeKey, teamOfRole } from './caller.js';
import { applied, judge, type LostCommitCheck, managedByConfig, type WriteContext, writeSettled } from './commit.js';
import { fieldsError, idOf, merged, patchChange, splitFields } from './fields.js';
import { loosenedLimits } from './key-limits.js';
import { type Asked, tagOf, type Written } from './written.js';

// The keys' writes: create, change, revoke, rotate, each with its authorization and
// validation, committed only when the key it leaves would join the keyring (the same schema
// a row is judged by when the keyring is built, and a team the keyring holds), audited
// however it ends, then applied by a keyring swap. A key's secret is in the answer that made
// it and nowhere else: the database keeps its SHA-256. A key of the config file is read-only
// here. A team token manages its own team's keys, and may tighten their limits, never loosen them.

const KEY_FIELDS = [
  'rpm',
  'tpm',
  'tokens_per_day',
  'budget_usd_per_month',
  'allowed_models',
  'allowed_tools',
  'tool_calls_per_day',
  'allowed_agents',
  'agent_messages_per_day',
  'residency',
] as const;
/** A rotation's old secret works at most this long after it: 30 days. */
const MAX_GRACE_S = 30 * 24 * 3600;
/** The visible start of a secret: `sy-` and 7 of its 43 random characters. */
const PREFIX_LENGTH = 10;

export function keyView(k: ManagedKey): Record<string, unknown> {
  return {
    id: k.id,
    team: k.team,
    prefix: k.prefix,
    ...k.spec,
    expires_at: k.expiresAt,
    metadata: k.metadata,
    managed_by: 'database',
    version: k.version,
    created_at: k.createdAt,
    updated_at: k.updatedAt,
    last_used_at: k.lastUsedAt,
    revoked_at: k.revokedAt,
    previous_secret_valid_until: k.previous !== null && Date.parse(k.previous.until) > Date.now() ? k.previous.until : null,
  };
}

/** A key of the config file: never revoked (it is removed from the file), its last use as this process saw it. */
export function configKeyView(k: KeyConfig, lastUsed: string | null): Record<string, unknown> {
  const out: Record<string, unknown> = { id: k.id, team: k.team, prefix: null };
  for (const field of KEY_FIELDS) if (k[field] !== undefined) out[field] = k[field];
  return {
    ...out,
    expires_at: k.expires_at ?? null,
    metadata: {},
    managed_by: 'config',
    last_used_at: lastUsed,
    revoked_at: null,
  };
}

export async function createKey(ctx: WriteContext, asked: Asked): Promise<Written> {
  const body = await asked.body();
  const id = idOf(body, false) ?? `key-${randomBytes(6).toString('hex')}`;
  if (typeof body.team !== 'string') throw fieldsError([{ path: 'team', message: 'required: the id of the team the key belongs to' }]);
  const team = body.team;
  mayWrite(ctx.caller, team);
  const { spec, metadata } = splitFields(body, KEY_FIELDS, ['id', 'team', 'expires_at']);
  const expiresAt = expiryOf(body.expires_at);
  const secret = newSecret();
  refuseUnjoinable(ctx.keyring, id, [secret.sha256]);
  const checked = checkKey({ ...spec, id, team, sha256: secret.sha256, ...(expiresAt === null ? {} : { expires_at: expiresAt }) });
  if (!checked.ok) throw fieldsError(checked.issues);
  refuseFileKey(ctx.keyring, null, id);
  // The team must exist for the next generation: the file's, or one in the database now.
  const settle: LostCommitCheck<null> = {
    target: { action: 'create', object: 'key', objectId: id },
    change: { team, ...spec, expires_at: expiresAt, metadata: metadata ?? {} },
    read: () => ctx.records.key(id),
    appliedValue: null,
    hint: 'if it exists, revoke it: its secret was only in this answer',
  };
  const { version } = await writeSettled(ctx.records, settle, async (w) => {
    if (ctx.keyring.fileTeams[team] === undefined && (await w.team(team)) === undefined) {
      throw fieldsError([{ path: 'team', message: `unknown team "${team}"` }]);
    }
    await refuseWiderResidency(ctx, w, checked.value);
    if ((await w.key(id)) !== undefined) throw new SwitchyardError('conflict', `key "${id}" already exists`);
    await w.insertKey({ id, team, sha256: secret.sha256, prefix: secret.prefix, spec, metadata: metadata ?? {}, expiresAt });
    return { commit: true, value: null };
  });
  const reload = await applied(ctx, settle, version);
  const key = (await ctx.records.key(id)) as ManagedKey;
  // The secret is in this answer and nowhere else: the database keeps its SHA-256.
  return { status: 201, view: { ...keyView(key), key: secret.key }, etag: tagOf(key.version), applied: reload };
}

export async function patchKey(ctx: WriteContext, asked: Asked, id: string): Promise<Written> {
  refuseFileKey(ctx.keyring, ctx.caller, id);
  const expected = asked.expected();
  const body = await asked.body();
  if (body.id !== undefined && body.id !== id) throw fieldsError([{ path: 'id', message: 'cannot be changed' }]);
  const patch = splitFields(body, KEY_FIELDS, ['id', 'team', 'expires_at']);
  const expiresAt = body.expires_at === undefined ? undefined : expiryOf(body.expires_at);
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'update', object: 'key', objectId: id },
    change: { ...patchChange(patch), ...(expiresAt === undefined ? {} : { expires_at: expiresAt }) },
    read: () => ctx.records.key(id),
    appliedValue: 'ok',
  };
  const { value: outcome, version } = await writeSettled(ctx.records, settle, async (w) => {
    const current = await w.key(id);
    if (current === undefined) return { commit: false, value: 'missing' as WriteResult };
    seeKey(ctx.caller, id, current.team);
    mayWrite(ctx.caller, current.team);
    if (body.team !== undefined && body.team !== current.team)
      throw fieldsError([{ path: 'team', message: 'cannot be changed: create a key in the other team' }]);
    if (current.revokedAt !== null) throw new SwitchyardError('conflict', `key "${id}" is revoked`);
    if (expected !== null && current.version !== expected) return { commit: false, value: 'stale' as WriteResult };
    const spec = merged(current.spec, patch.spec);
    const expiry = expiresAt === undefined ? current.expiresAt : expiresAt;
    if (teamOfRole(ctx.caller) !== null) {
      const loosened = loosenedLimits({ spec: current.spec, expiresAt: current.expiresAt }, { spec, expiresAt: expiry });
      if (loosened.length > 0) throw fieldsError(loosened, 'forbidden');
    }
    const checked = checkKey({
      ...spec,
      id,
      team: current.team,
      sha256: current.sha256,
      ...(expiry === null ? {} : { expires_at: expiry }),
    });
    if (!checked.ok) throw fieldsError(checked.issues);
    await refuseWiderResidency(ctx, w, checked.value);
    const result = await w.updateKey(id, current.version, {
      spec,
      ...(patch.metadata === undefined ? {} : { metadata: patch.metadata }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    });
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'key', id);
  return keyWritten(ctx, settle, version, id);
}

export async function revokeKey(ctx: WriteContext, asked: Asked, id: string): Promise<Written> {
  refuseFileKey(ctx.keyring, ctx.caller, id);
  const expected = asked.expected();
  await asked.drain();
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'revoke', object: 'key', objectId: id },
    change: null,
    read: () => ctx.records.key(id),
    appliedValue: 'ok',
  };
  const { value: outcome, version } = await writeSettled(ctx.records, settle, async (w) => {
    const current = await w.key(id);
    if (current === undefined) return { commit: false, value: 'missing' as WriteResult };
    seeKey(ctx.caller, id, current.team);
    mayWrite(ctx.caller, current.team);
    if (expected !== null && current.version !== expected) return { commit: false, value: 'stale' as WriteResult };
    // Revoking twice is the same as once.
    if (current.revokedAt !== null) return { commit: false, value: 'ok' as WriteResult };
    const result = await w.updateKey(id, current.version, { revokedAt: new Date().toISOString() });
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'key', id);
  // Revoking a revoked key commits nothing (version null), and is audited as applied all the same.
  return keyWritten(ctx, settle, version, id);
}

export async function rotateKey(ctx: WriteContext, asked: Asked, id: string): Promise<Written> {
  refuseFileKey(ctx.keyring, ctx.caller, id);
  const expected = asked.expected();
  const body = await asked.body(true);
  const unknown = Object.keys(body).filter((k) => k !== 'grace_s');
  if (unknown.length > 0) throw fieldsError(unknown.map((k) => ({ path: k, message: 'unknown key (rotate takes grace_s)' })));
  const grace = body.grace_s ?? 0;
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > MAX_GRACE_S) {
    throw fieldsError([{ path: 'grace_s', message: `must be a whole number of seconds, 0-${MAX_GRACE_S}` }]);
  }
  const secret = newSecret();
  refuseUnjoinable(ctx.keyring, id, [secret.sha256]);
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'rotate', object: 'key', objectId: id },
    change: { grace_s: grace },
    read: () => ctx.records.key(id),
    appliedValue: 'ok',
    hint: `if its prefix is now ${secret.prefix}, the rotation took effect: rotate again to get a secret you hold`,
  };
  const { value: outcome, version } = await writeSettled(ctx.records, settle, async (w) => {
    const current = await w.key(id);
    if (current === undefined) return { commit: false, value: 'missing' as WriteResult };
    seeKey(ctx.caller, id, current.team);
    mayWrite(ctx.caller, current.team);
    if (current.revokedAt !== null) throw new SwitchyardError('conflict', `key "${id}" is revoked`);
    if (expected !== null && current.version !== expected) return { commit: false, value: 'stale' as WriteResult };
    const previous = grace > 0 ? { sha256: current.sha256, until: new Date(Date.now() + grace * 1000).toISOString() } : null;
    const result = await w.updateKey(id, current.version, { secret: { sha256: secret.sha256, prefix: secret.prefix, previous } });
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'key', id);
  return keyWritten(ctx, settle, version, id, secret.key);
}

function newSecret(): { key: string; sha256: string; prefix: string } {
  const key = `sy-${randomBytes(32).toString('base64url')}`;
  return { key, sha256: hashKey(key), prefix: key.slice(0, PREFIX_LENGTH) };
}

function expiryOf(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) {
    throw fieldsError([{ path: 'expires_at', message: 'must be an RFC 3339 timestamp, e.g. 2027-06-30T00:00:00Z' }]);
  }
  return value;
}

/**
 * A key's zones must lie within its team's, as in the config file (400 naming each field,
 * `residency.allow[1]`): its team is the file's or the database's as the write sees it.
 */
async function refuseWiderResidency(ctx: WriteContext, w: Pick<ManagedRecords, 'team'>, key: KeyConfig): Promise<void> {
  if (key.residency === undefined) return;
  let team = ctx.keyring.fileTeams[key.team];
  if (team === undefined) {
    const row = await w.team(key.team);
    const checked = row === undefined ? null : checkTeam(row.spec);
    team = checked?.ok === true ? checked.value : undefined;
  }
  const wider = widerResidency(key.residency, team?.residency, key.team);
  if (wider.length === 0) return;
  const pathOf = (at: readonly (string | number)[]): string =>
    `residency${at.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('')}`;
  throw fieldsError(wider.map((i) => ({ path: pathOf(i.path), message: i.message })));
}

/** A key of the config file is read-only here (and, to another team's token, not there at all). */
/**
 * The keyring a write leaves is checked before the write commits: a key the keyring would
 * skip when it joins the database's rows to the file's (live/managed.ts: an id or a secret's
 * hash the file already holds) is refused here rather than committed and then left out.
 */
function refuseUnjoinable(keyring: Keyring, id: string, sha256: readonly string[]): void {
  if (keyring.file.index.ids.has(id)) throw managedByConfig('key', id);
  if (sha256.some((d) => keyring.file.index.digests.has(d)))
    throw new SwitchyardError('conflict', `key "${id}": its secret's hash is a config file key's; try again`);
}

export function refuseFileKey(keyring: Keyring, caller: AdminCaller | null, id: string): void {
  const key = keyring.fileKeys.find((k) => k.id === id);
  if (key === undefined) return;
  if (caller !== null) seeKey(caller, id, key.team);
  throw managedByConfig('key', id);
}

/**
 * A committed (or already applied) key write: applied to this replica's keyring and audited,
 * then answered with the key as the database now holds it, and the new secret when one was made.
 */
async function keyWritten(
  ctx: WriteContext,
  settle: LostCommitCheck<WriteResult>,
  version: number | null,
  id: string,
  secret?: string,
): Promise<Written> {
  const reload = await applied(ctx, settle, version);
  const key = (await ctx.records.key(id)) as ManagedKey;
  const view = secret === undefined ? keyView(key) : { ...keyView(key), key: secret };
  return { status: 200, view, etag: tagOf(key.version), applied: reload };
}
