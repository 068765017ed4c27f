import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AdminWriteInput, adminWrite } from '../audit/index.js';
import { type ConfigIssue, checkKey, checkTeam, type KeyConfig } from '../config/index.js';
import { ConstraintError, type ManagedKey, type ManagedRecords, type ManagedTeam, type WriteResult } from '../database/index.js';
import { errorCatalog, SwitchyardError } from '../errors.js';
import { hashKey } from '../governance/index.js';
import type { Generation } from '../live/index.js';
import { readBody, type Services } from '../request/index.js';
import { serveUsage } from './admin-usage.js';
import { type LostCommitCheck, OutcomeUnknownError, writeSettled, writeTargetOf } from './admin-write.js';
import type { DatabaseLink } from './database-link.js';
import { loosenedLimits } from './key-limits.js';
import type { ReloadResult } from './reload.js';

// The managed teams and keys, under /admin/v1/: list, read, create, change, delete (a team)
// and revoke or rotate (a key). Bodies use the config file's field names and are judged by
// the config file's schemas; a write is committed only when the generation it makes would
// be valid, and is then applied by a reload with trigger `database` before the answer, so
// the new key works on this replica when the client reads it. Teams and keys of the config
// file are listed too, and read-only (409 managed_by_config). Every object has an ETag; a
// write with a stale If-Match is 412 and changes nothing.

/** What the managed endpoints need of the admin listener's context. */
export interface V1Context {
  readonly svc: Services;
  readonly database: DatabaseLink;
  /** The reload a committed write asks for (trigger `database`). */
  readonly reloadForDatabase: () => Promise<ReloadResult>;
}

/** Who is calling the admin API, by the token it presented. */
export interface AdminCaller {
  /** The token's id (`admin` for server.admin_token; `anonymous` when the listener needs none). */
  readonly id: string;
  /** `admin`, `read_only` or `team:<id>`. */
  readonly role: string;
}

export interface V1Request {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly caller: AdminCaller;
}

const TEAM_FIELDS = ['rate_limit', 'quota', 'budget', 'allowed_models', 'allowed_tools'] as const;
const KEY_FIELDS = [
  'rpm',
  'tpm',
  'tokens_per_day',
  'budget_usd_per_month',
  'allowed_models',
  'allowed_tools',
  'tool_calls_per_day',
] as const;
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_BODY_BYTES = 64 * 1024;
const DEFAULT_PAGE = 100;
const MAX_PAGE = 500;
/** A rotation's old secret works at most this long after it: 30 days. */
const MAX_GRACE_S = 30 * 24 * 3600;
/** The visible start of a secret: `sy-` and 7 of its 43 random characters. */
const PREFIX_LENGTH = 10;

/** A refusal naming the fields at fault: the error body lists each with its path. */
class FieldsError extends SwitchyardError {
  readonly issues: readonly ConfigIssue[];
  constructor(message: string, issues: readonly ConfigIssue[], code: 'invalid_request' | 'forbidden') {
    super(code, message, issues[0]?.path ?? null);
    this.issues = issues;
  }
}

const fieldsError = (issues: readonly ConfigIssue[], code: 'invalid_request' | 'forbidden' = 'invalid_request'): FieldsError =>
  new FieldsError(issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`)).join('; '), issues, code);

/** Answers one /admin/v1/ request; `rest` is the path after /admin/v1/. */
export async function serveV1(ctx: V1Context, a: V1Request, method: string, rest: string): Promise<void> {
  try {
    await route(ctx, a, method, rest);
  } catch (caught) {
    // Two writes raced past the checks: the database's own constraint decided.
    const err =
      caught instanceof ConstraintError
        ? new SwitchyardError('conflict', `that id or secret is taken (${caught.message})`)
        : isDatabaseFailure(caught)
          ? new SwitchyardError(
              'database_unavailable',
              `the database did not answer (${(caught as { code?: string }).code ?? (caught as Error).message}); ${auditedWrites.has(a) ? 'the write was committed, but reading it back failed: read it again' : 'nothing was written'}`,
            )
          : caught;
    if (err instanceof SwitchyardError) auditAttempt(ctx.svc, a, method, rest, err);
    if (!(err instanceof SwitchyardError) || a.res.headersSent) throw err;
    // The catalog's OpenAI shape, as the rest of the admin API answers, with every field at fault.
    const error: Record<string, unknown> = { message: err.message, type: errorCatalog[err.code].openai, param: err.param, code: err.code };
    if (err instanceof FieldsError) error.errors = err.issues;
    send(a.res, err.status, { error }, err.headers);
  }
}

/** Write attempts whose `applied` record is written: a later failure (reading the object back) is not another attempt. */
const auditedWrites = new WeakSet<V1Request>();

/** A write attempt that was not applied: refused (4xx), failed (nothing written) or unknown. */
function auditAttempt(svc: Services, a: V1Request, method: string, rest: string, err: SwitchyardError): void {
  if (auditedWrites.has(a)) return;
  let parts: string[];
  try {
    parts = rest.split('/').map((p) => decodeURIComponent(p));
  } catch {
    parts = rest.split('/');
  }
  const known = err instanceof OutcomeUnknownError ? err.target : writeTargetOf(method, parts);
  if (known === null) return;
  const outcome = err instanceof OutcomeUnknownError ? 'unknown' : err.status < 500 ? 'refused' : 'failed';
  const change = err instanceof OutcomeUnknownError ? err.change : null;
  audit(svc, { ...known, token: a.caller.id, outcome, reason: err.code, change, version: null });
}

async function route(ctx: V1Context, a: V1Request, method: string, rest: string): Promise<void> {
  const parts = rest.split('/').map(pathSegment);
  const [collection, id, action] = parts;
  // The usage ledger: its own file, its own parameters.
  if (collection === 'usage') {
    const settings = ctx.database.settings;
    const usage = settings === null ? null : { maxRangeDays: settings.usage_max_range_days };
    return serveUsage(ctx.database.database, usage, a, method, parts.slice(1));
  }
  if (parts.length > 3 || (collection !== 'teams' && collection !== 'keys')) {
    throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
  }
  const records = ctx.database.records;
  if (records === null) throw new SwitchyardError('not_found', 'managed teams and keys need a database: set database.url in the config');
  const gen = ctx.svc.holder.current();
  if (collection === 'teams') {
    if (action !== undefined) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
    if (id === undefined) {
      if (method === 'GET') return listTeams(a, records, gen);
      if (method === 'POST') return createTeam(ctx, a, records, gen);
      throw notAllowed('GET, POST');
    }
    if (method === 'GET') return getTeam(a, records, gen, id);
    if (method === 'PATCH') return patchTeam(ctx, a, records, gen, id);
    if (method === 'DELETE') return deleteTeam(ctx, a, records, gen, id);
    throw notAllowed('GET, PATCH, DELETE');
  }
  if (id === undefined) {
    if (action !== undefined) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
    if (method === 'GET') return listKeys(ctx.svc, a, records, gen);
    if (method === 'POST') return createKey(ctx, a, records, gen);
    throw notAllowed('GET, POST');
  }
  if (action === undefined) {
    if (method === 'GET') return getKey(ctx.svc, a, records, gen, id);
    if (method === 'PATCH') return patchKey(ctx, a, records, gen, id);
    throw notAllowed('GET, PATCH');
  }
  if (action !== 'revoke' && action !== 'rotate') throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
  if (method !== 'POST') throw notAllowed('POST');
  return action === 'revoke' ? revokeKey(ctx, a, records, gen, id) : rotateKey(ctx, a, records, gen, id);
}

/** What each position of /admin/v1/<collection>/<id>/<action> is called in a refusal. */
const SEGMENT_NAMES = ['collection', 'id', 'action'] as const;

/**
 * One path segment, percent-decoded. Every admin path parameter passes here: a malformed
 * escape (`%E0%A4%A`) or a NUL is the caller's mistake, a 400 naming the segment, never
 * a thrown URIError (a 500) nor a NUL handed to the database.
 */
function pathSegment(raw: string, index: number): string {
  const name = SEGMENT_NAMES[index] ?? 'path';
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new SwitchyardError('invalid_request', `the path's ${name} is not valid percent-encoded UTF-8`, name);
  }
  if (decoded.includes('\0')) throw new SwitchyardError('invalid_request', `the path's ${name} must not contain a NUL character`, name);
  return decoded;
}

/** A driver's failure to reach or use the database (a connection refused or cut, a locked or read-only file). */
function isDatabaseFailure(err: unknown): boolean {
  if (err instanceof SwitchyardError) return false;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string')
    return /^(E[A-Z]+|08...|55000|57014|57P0.|53...|SQLITE_(BUSY|LOCKED|READONLY|CANTOPEN|IOERR|FULL).*)$/.test(code);
  // pg's own: a connection that ended under a query, could not be made in time, or a
  // statement that outlived the client-side query timeout (57014 is the server's).
  return (
    err instanceof Error &&
    /^Connection terminated|^timeout exceeded when trying to connect|^Query read timeout|^Client has encountered a connection error/.test(
      err.message,
    )
  );
}

const notAllowed = (allow: string): SwitchyardError =>
  new SwitchyardError('method_not_allowed', `this admin endpoint takes ${allow}`, null, { allow });

// --- Roles ---

function teamOfRole(caller: AdminCaller): string | null {
  return caller.role.startsWith('team:') ? caller.role.slice('team:'.length) : null;
}

/** An admin token, or a team token for its own team (`team` null: a write only an admin may make). */
function mayWrite(caller: AdminCaller, team: string | null): void {
  if (caller.role === 'admin') return;
  const own = teamOfRole(caller);
  if (own !== null && team !== null && own === team) return;
  throw new SwitchyardError(
    'forbidden',
    caller.role === 'read_only'
      ? `admin token "${caller.id}" is read-only`
      : `admin token "${caller.id}" (role ${caller.role}) may not ${team === null ? 'change teams' : `manage team "${team}"`}`,
  );
}

function mayRead(caller: AdminCaller, team: string): void {
  const own = teamOfRole(caller);
  if (own !== null && own !== team) throw new SwitchyardError('forbidden', `admin token "${caller.id}" may read team "${own}" only`);
}

/**
 * To a team token, another team's key does not exist: the same 404 as a key that does not,
 * so that a team cannot learn which ids the others use.
 */
function seeKey(caller: AdminCaller, id: string, team: string): void {
  const own = teamOfRole(caller);
  if (own !== null && own !== team) throw noKey(id);
}

const noKey = (id: string): SwitchyardError => new SwitchyardError('not_found', `no key "${id}"`);

// --- Teams ---

function teamView(t: ManagedTeam): Record<string, unknown> {
  return {
    id: t.id,
    ...t.spec,
    metadata: t.metadata,
    managed_by: 'database',
    version: t.version,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  };
}

function configTeamView(gen: Generation, id: string): Record<string, unknown> {
  return { id, ...(gen.fileConfig.teams?.[id] ?? {}), metadata: {}, managed_by: 'config' };
}

async function listTeams(a: V1Request, records: ManagedRecords, gen: Generation): Promise<void> {
  const { limit, after } = pageOf(a.req);
  const own = teamOfRole(a.caller);
  const fromConfig = Object.keys(gen.fileConfig.teams ?? {})
    .filter((id) => (after === undefined || id > after) && (own === null || id === own))
    .map((id) => ({ id, view: configTeamView(gen, id) }));
  const fromDatabase = (await records.listTeams({ limit: limit + 1, ...(after === undefined ? {} : { after }) }))
    .filter((t) => own === null || t.id === own)
    .map((t) => ({ id: t.id, view: teamView(t) }));
  sendPage(a.res, [...fromConfig, ...fromDatabase], limit);
}

async function getTeam(a: V1Request, records: ManagedRecords, gen: Generation, id: string): Promise<void> {
  mayRead(a.caller, id);
  if (gen.fileConfig.teams?.[id] !== undefined) return sendObject(a.res, 200, configTeamView(gen, id), configTag(gen));
  const team = await records.team(id);
  if (team === undefined) throw new SwitchyardError('not_found', `no team "${id}"`);
  sendObject(a.res, 200, teamView(team), tagOf(team.version));
}

async function createTeam(ctx: V1Context, a: V1Request, records: ManagedRecords, gen: Generation): Promise<void> {
  mayWrite(a.caller, null);
  const body = await jsonBody(a.req);
  const id = idOf(body, true) as string;
  const { spec, metadata } = splitFields(body, TEAM_FIELDS, ['id']);
  const checked = checkTeam(spec);
  if (!checked.ok) throw fieldsError(checked.issues);
  if (gen.fileConfig.teams?.[id] !== undefined) throw managedByConfig('team', id);
  const settle: LostCommitCheck<null> = {
    target: { action: 'create', object: 'team', objectId: id },
    change: { ...spec, metadata: metadata ?? {} },
    read: () => records.team(id),
    appliedValue: null,
  };
  const { version } = await writeSettled(records, settle, async (w) => {
    if ((await w.team(id)) !== undefined) throw new SwitchyardError('conflict', `team "${id}" already exists`);
    await w.insertTeam({ id, spec, metadata: metadata ?? {} });
    return { commit: true, value: null };
  });
  const reload = await applied(ctx, a, {
    action: 'create',
    object: 'team',
    objectId: id,
    change: { ...spec, metadata: metadata ?? {} },
    version,
  });
  const team = (await records.team(id)) as ManagedTeam;
  sendObject(a.res, 201, teamView(team), tagOf(team.version), reload);
}

async function patchTeam(ctx: V1Context, a: V1Request, records: ManagedRecords, gen: Generation, id: string): Promise<void> {
  mayWrite(a.caller, null);
  if (gen.fileConfig.teams?.[id] !== undefined) throw managedByConfig('team', id);
  const expected = ifMatch(a.req);
  const body = await jsonBody(a.req);
  if (body.id !== undefined && body.id !== id) throw fieldsError([{ path: 'id', message: 'cannot be changed' }]);
  const patch = splitFields(body, TEAM_FIELDS, ['id']);
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'update', object: 'team', objectId: id },
    change: patchChange(patch),
    read: () => records.team(id),
    appliedValue: 'ok',
  };
  const { value: outcome, version } = await writeSettled(records, settle, async (w) => {
    const current = await w.team(id);
    if (current === undefined) return { commit: false, value: 'missing' as WriteResult };
    if (expected !== null && current.version !== expected) return { commit: false, value: 'stale' as WriteResult };
    const spec = merged(current.spec, patch.spec);
    const checked = checkTeam(spec);
    if (!checked.ok) throw fieldsError(checked.issues);
    const result = await w.updateTeam(id, current.version, spec, patch.metadata ?? current.metadata);
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'team', id);
  const reload = await applied(ctx, a, {
    action: 'update',
    object: 'team',
    objectId: id,
    change: patchChange(patch),
    version: version as number,
  });
  const team = (await records.team(id)) as ManagedTeam;
  sendObject(a.res, 200, teamView(team), tagOf(team.version), reload);
}

async function deleteTeam(ctx: V1Context, a: V1Request, records: ManagedRecords, gen: Generation, id: string): Promise<void> {
  mayWrite(a.caller, null);
  if (gen.fileConfig.teams?.[id] !== undefined) throw managedByConfig('team', id);
  const expected = ifMatch(a.req);
  await readBody(a.req, MAX_BODY_BYTES);
  // A key of the config file may name a managed team too: it keeps the team as much as a managed key does.
  const configKeys = (gen.fileConfig.keys ?? []).filter((k) => k.team === id).length;
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'delete', object: 'team', objectId: id },
    change: null,
    read: () => records.team(id),
    appliedValue: 'ok',
  };
  const { value: outcome, version } = await writeSettled(records, settle, async (w) => {
    const keys = (await w.keyCount(id)) + configKeys;
    if (keys > 0 && (await w.team(id)) !== undefined)
      throw new SwitchyardError('conflict', `team "${id}" still has ${keys} key${keys === 1 ? '' : 's'}: revoke or move them first`);
    const result = await w.deleteTeam(id, expected);
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'team', id);
  const reload = await applied(ctx, a, { action: 'delete', object: 'team', objectId: id, change: null, version: version as number });
  a.res.writeHead(204, reloadHeaders(reload));
  a.res.end();
}

// --- Keys ---

function keyView(k: ManagedKey): Record<string, unknown> {
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
function configKeyView(svc: Services, k: KeyConfig): Record<string, unknown> {
  const out: Record<string, unknown> = { id: k.id, team: k.team, prefix: null };
  for (const field of KEY_FIELDS) if (k[field] !== undefined) out[field] = k[field];
  return {
    ...out,
    expires_at: k.expires_at ?? null,
    metadata: {},
    managed_by: 'config',
    last_used_at: svc.keysUsed.lastUsed(k.id),
    revoked_at: null,
  };
}

async function listKeys(svc: Services, a: V1Request, records: ManagedRecords, gen: Generation): Promise<void> {
  const { limit, after } = pageOf(a.req);
  const url = new URL(a.req.url ?? '/', 'http://admin');
  const own = teamOfRole(a.caller);
  const asked = url.searchParams.get('team');
  if (own !== null && asked !== null && asked !== own) mayRead(a.caller, asked);
  const team = own ?? asked ?? undefined;
  const revoked = url.searchParams.get('revoked') === 'true';
  const fromConfig = (gen.fileConfig.keys ?? [])
    .filter((k) => (after === undefined || k.id > after) && (team === undefined || k.team === team))
    .sort((x, y) => (x.id < y.id ? -1 : 1))
    .map((k) => ({ id: k.id, view: configKeyView(svc, k) }));
  const fromDatabase = (
    await records.listKeys({
      limit: limit + 1,
      ...(after === undefined ? {} : { after }),
      ...(team === undefined ? {} : { team }),
      revoked,
    })
  ).map((k) => ({ id: k.id, view: keyView(k) }));
  sendPage(a.res, [...fromConfig, ...fromDatabase], limit);
}

async function getKey(svc: Services, a: V1Request, records: ManagedRecords, gen: Generation, id: string): Promise<void> {
  const fromConfig = (gen.fileConfig.keys ?? []).find((k) => k.id === id);
  if (fromConfig !== undefined) {
    seeKey(a.caller, id, fromConfig.team);
    return sendObject(a.res, 200, configKeyView(svc, fromConfig), configTag(gen));
  }
  const key = await records.key(id);
  if (key === undefined) throw noKey(id);
  seeKey(a.caller, id, key.team);
  sendObject(a.res, 200, keyView(key), tagOf(key.version));
}

async function createKey(ctx: V1Context, a: V1Request, records: ManagedRecords, gen: Generation): Promise<void> {
  const body = await jsonBody(a.req);
  const id = idOf(body, false) ?? `key-${randomBytes(6).toString('hex')}`;
  if (typeof body.team !== 'string') throw fieldsError([{ path: 'team', message: 'required: the id of the team the key belongs to' }]);
  const team = body.team;
  mayWrite(a.caller, team);
  const { spec, metadata } = splitFields(body, KEY_FIELDS, ['id', 'team', 'expires_at']);
  const expiresAt = expiryOf(body.expires_at);
  const secret = newSecret();
  const checked = checkKey({ ...spec, id, team, sha256: secret.sha256, ...(expiresAt === null ? {} : { expires_at: expiresAt }) });
  if (!checked.ok) throw fieldsError(checked.issues);
  refuseFileKey(gen, null, id);
  // The team must exist for the next generation: the file's, or one in the database now.
  const settle: LostCommitCheck<null> = {
    target: { action: 'create', object: 'key', objectId: id },
    change: { team, ...spec, expires_at: expiresAt, metadata: metadata ?? {} },
    read: () => records.key(id),
    appliedValue: null,
    hint: 'if it exists, revoke it: its secret was only in this answer',
  };
  const { version } = await writeSettled(records, settle, async (w) => {
    if (gen.fileConfig.teams?.[team] === undefined && (await w.team(team)) === undefined) {
      throw fieldsError([{ path: 'team', message: `unknown team "${team}"` }]);
    }
    if ((await w.key(id)) !== undefined) throw new SwitchyardError('conflict', `key "${id}" already exists`);
    await w.insertKey({ id, team, sha256: secret.sha256, prefix: secret.prefix, spec, metadata: metadata ?? {}, expiresAt });
    return { commit: true, value: null };
  });
  const change = { team, ...spec, expires_at: expiresAt, metadata: metadata ?? {} };
  const reload = await applied(ctx, a, { action: 'create', object: 'key', objectId: id, change, version });
  const key = (await records.key(id)) as ManagedKey;
  // The secret is in this answer and nowhere else: the database keeps its SHA-256.
  sendObject(a.res, 201, { ...keyView(key), key: secret.key }, tagOf(key.version), reload);
}

async function patchKey(ctx: V1Context, a: V1Request, records: ManagedRecords, gen: Generation, id: string): Promise<void> {
  refuseFileKey(gen, a.caller, id);
  const expected = ifMatch(a.req);
  const body = await jsonBody(a.req);
  if (body.id !== undefined && body.id !== id) throw fieldsError([{ path: 'id', message: 'cannot be changed' }]);
  const patch = splitFields(body, KEY_FIELDS, ['id', 'team', 'expires_at']);
  const expiresAt = body.expires_at === undefined ? undefined : expiryOf(body.expires_at);
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'update', object: 'key', objectId: id },
    change: { ...patchChange(patch), ...(expiresAt === undefined ? {} : { expires_at: expiresAt }) },
    read: () => records.key(id),
    appliedValue: 'ok',
  };
  const { value: outcome, version } = await writeSettled(records, settle, async (w) => {
    const current = await w.key(id);
    if (current === undefined) return { commit: false, value: 'missing' as WriteResult };
    seeKey(a.caller, id, current.team);
    mayWrite(a.caller, current.team);
    if (body.team !== undefined && body.team !== current.team)
      throw fieldsError([{ path: 'team', message: 'cannot be changed: create a key in the other team' }]);
    if (current.revokedAt !== null) throw new SwitchyardError('conflict', `key "${id}" is revoked`);
    if (expected !== null && current.version !== expected) return { commit: false, value: 'stale' as WriteResult };
    const spec = merged(current.spec, patch.spec);
    const expiry = expiresAt === undefined ? current.expiresAt : expiresAt;
    if (teamOfRole(a.caller) !== null) {
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
    const result = await w.updateKey(id, current.version, {
      spec,
      ...(patch.metadata === undefined ? {} : { metadata: patch.metadata }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    });
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'key', id);
  const change = { ...patchChange(patch), ...(expiresAt === undefined ? {} : { expires_at: expiresAt }) };
  const reload = await applied(ctx, a, { action: 'update', object: 'key', objectId: id, change, version: version as number });
  const key = (await records.key(id)) as ManagedKey;
  sendObject(a.res, 200, keyView(key), tagOf(key.version), reload);
}

async function revokeKey(ctx: V1Context, a: V1Request, records: ManagedRecords, gen: Generation, id: string): Promise<void> {
  refuseFileKey(gen, a.caller, id);
  const expected = ifMatch(a.req);
  await readBody(a.req, MAX_BODY_BYTES);
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'revoke', object: 'key', objectId: id },
    change: null,
    read: () => records.key(id),
    appliedValue: 'ok',
  };
  const { value: outcome, version } = await writeSettled(records, settle, async (w) => {
    const current = await w.key(id);
    if (current === undefined) return { commit: false, value: 'missing' as WriteResult };
    seeKey(a.caller, id, current.team);
    mayWrite(a.caller, current.team);
    if (expected !== null && current.version !== expected) return { commit: false, value: 'stale' as WriteResult };
    // Revoking twice is the same as once.
    if (current.revokedAt !== null) return { commit: false, value: 'ok' as WriteResult };
    const result = await w.updateKey(id, current.version, { revokedAt: new Date().toISOString() });
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'key', id);
  // Revoking a revoked key commits nothing (version null), and is audited as applied all the same.
  const reload = await applied(ctx, a, { action: 'revoke', object: 'key', objectId: id, change: null, version });
  const key = (await records.key(id)) as ManagedKey;
  sendObject(a.res, 200, keyView(key), tagOf(key.version), reload);
}

async function rotateKey(ctx: V1Context, a: V1Request, records: ManagedRecords, gen: Generation, id: string): Promise<void> {
  refuseFileKey(gen, a.caller, id);
  const expected = ifMatch(a.req);
  const body = await jsonBody(a.req, true);
  const unknown = Object.keys(body).filter((k) => k !== 'grace_s');
  if (unknown.length > 0) throw fieldsError(unknown.map((k) => ({ path: k, message: 'unknown key (rotate takes grace_s)' })));
  const grace = body.grace_s ?? 0;
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > MAX_GRACE_S) {
    throw fieldsError([{ path: 'grace_s', message: `must be a whole number of seconds, 0-${MAX_GRACE_S}` }]);
  }
  const secret = newSecret();
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'rotate', object: 'key', objectId: id },
    change: { grace_s: grace },
    read: () => records.key(id),
    appliedValue: 'ok',
    hint: `if its prefix is now ${secret.prefix}, the rotation took effect: rotate again to get a secret you hold`,
  };
  const { value: outcome, version } = await writeSettled(records, settle, async (w) => {
    const current = await w.key(id);
    if (current === undefined) return { commit: false, value: 'missing' as WriteResult };
    seeKey(a.caller, id, current.team);
    mayWrite(a.caller, current.team);
    if (current.revokedAt !== null) throw new SwitchyardError('conflict', `key "${id}" is revoked`);
    if (expected !== null && current.version !== expected) return { commit: false, value: 'stale' as WriteResult };
    const previous = grace > 0 ? { sha256: current.sha256, until: new Date(Date.now() + grace * 1000).toISOString() } : null;
    const result = await w.updateKey(id, current.version, { secret: { sha256: secret.sha256, prefix: secret.prefix, previous } });
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'key', id);
  const reload = await applied(ctx, a, {
    action: 'rotate',
    object: 'key',
    objectId: id,
    change: { grace_s: grace },
    version: version as number,
  });
  const key = (await records.key(id)) as ManagedKey;
  sendObject(a.res, 200, { ...keyView(key), key: secret.key }, tagOf(key.version), reload);
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

// --- Shared ---

/** The write is committed: audited, then applied here by a reload, so the answer reflects it. */
async function applied(
  ctx: V1Context,
  a: V1Request,
  write: Omit<AdminWriteInput, 'token' | 'version' | 'outcome' | 'reason'> & { readonly version: number | null },
): Promise<ReloadResult | null> {
  auditedWrites.add(a);
  audit(ctx.svc, { ...write, token: a.caller.id, outcome: 'applied', reason: null, version: write.version });
  if (write.version === null) return null;
  return ctx.reloadForDatabase().catch(() => null);
}

function audit(svc: Services, write: AdminWriteInput): void {
  svc.audit?.append(adminWrite(write));
}

function judge(outcome: WriteResult, object: 'team' | 'key', id: string): void {
  if (outcome === 'missing') throw object === 'key' ? noKey(id) : new SwitchyardError('not_found', `no team "${id}"`);
  if (outcome === 'stale') {
    throw new SwitchyardError('precondition_failed', `${object} "${id}" has changed since that ETag: read it again, then write`);
  }
}

/** A key of the config file is read-only here (and, to another team's token, not there at all). */
function refuseFileKey(gen: Generation, caller: AdminCaller | null, id: string): void {
  const key = (gen.fileConfig.keys ?? []).find((k) => k.id === id);
  if (key === undefined) return;
  if (caller !== null) seeKey(caller, id, key.team);
  throw managedByConfig('key', id);
}

const managedByConfig = (object: 'team' | 'key', id: string): SwitchyardError =>
  new SwitchyardError('managed_by_config', `${object} "${id}" is written in the config file: change it there (it is read-only here)`);

function idOf(body: Record<string, unknown>, required: boolean): string | null {
  const id = body.id;
  if (id === undefined && !required) return null;
  if (typeof id !== 'string' || !ID.test(id)) {
    throw fieldsError([{ path: 'id', message: 'must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)' }]);
  }
  return id;
}

/** The body's config fields (spec) and metadata; anything else is refused by name. */
function splitFields(
  body: Record<string, unknown>,
  fields: readonly string[],
  others: readonly string[],
): { spec: Record<string, unknown>; metadata: Record<string, unknown> | undefined } {
  const spec: Record<string, unknown> = {};
  const issues: ConfigIssue[] = [];
  for (const [name, value] of Object.entries(body)) {
    if (fields.includes(name)) spec[name] = value;
    else if (name !== 'metadata' && !others.includes(name)) issues.push({ path: name, message: 'unknown key' });
  }
  const metadata = body.metadata;
  if (metadata !== undefined && (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))) {
    issues.push({ path: 'metadata', message: 'must be an object' });
  } else if (metadata !== undefined && JSON.stringify(metadata).length > 8192) {
    issues.push({ path: 'metadata', message: 'must be at most 8 KiB as JSON' });
  }
  if (issues.length > 0) throw fieldsError(issues);
  return { spec, metadata: metadata as Record<string, unknown> | undefined };
}

/** A JSON merge patch (RFC 7396) at the top level: a field set to null is removed. */
function merged(current: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...current };
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete out[name];
    else out[name] = value;
  }
  return out;
}

function patchChange(patch: { spec: Record<string, unknown>; metadata: Record<string, unknown> | undefined }): Record<string, unknown> {
  return patch.metadata === undefined ? patch.spec : { ...patch.spec, metadata: patch.metadata };
}

async function jsonBody(req: IncomingMessage, emptyIsObject = false): Promise<Record<string, unknown>> {
  const bytes = await readBody(req, MAX_BODY_BYTES);
  if (bytes.length === 0 && emptyIsObject) return {};
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new SwitchyardError('invalid_json', 'the body is not JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new SwitchyardError('invalid_request', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/** `If-Match: "7"` -> 7; absent or `*` -> null (the write is unconditional). */
function ifMatch(req: IncomingMessage): number | null {
  const header = req.headers['if-match'];
  if (header === undefined || header.trim() === '*') return null;
  const m = /^\s*(?:W\/)?"(\d{1,15})"\s*$/.exec(header);
  // An ETag this API never gave (a config object's, or garbage) matches no version.
  return m === null ? -1 : Number(m[1]);
}

const tagOf = (version: number): string => `"${version}"`;
const configTag = (gen: Generation): string => `"config-${gen.sourceHash.slice(0, 16)}"`;

function pageOf(req: IncomingMessage): { limit: number; after: string | undefined } {
  const url = new URL(req.url ?? '/', 'http://admin');
  const raw = url.searchParams.get('limit');
  const limit = raw === null ? DEFAULT_PAGE : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new SwitchyardError('invalid_request', `limit must be a whole number 1-${MAX_PAGE}`, 'limit');
  }
  const after = url.searchParams.get('after') ?? undefined;
  return { limit, after };
}

/** One page of a list merged from the config file and the database, by id; `next` is the cursor of the page after. */
function sendPage(res: ServerResponse, items: Array<{ id: string; view: Record<string, unknown> }>, limit: number): void {
  items.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  const page = items.slice(0, limit);
  const next = items.length > limit ? (page[page.length - 1]?.id ?? null) : null;
  send(res, 200, { data: page.map((i) => i.view), next });
}

function reloadHeaders(reload: ReloadResult | null): Record<string, string> {
  if (reload === null) return {};
  return { 'x-switchyard-reload': reload.result, 'x-switchyard-generation': String(reload.generation) };
}

/** A write's answer (`reload` given, null when none ran) carries the warnings of the reload that applied it. */
function sendObject(res: ServerResponse, status: number, view: Record<string, unknown>, etag: string, reload?: ReloadResult | null): void {
  const body = reload === undefined ? view : { ...view, warnings: reload?.warnings ?? [] };
  send(res, status, body, { etag, ...reloadHeaders(reload ?? null) });
}

function send(res: ServerResponse, status: number, value: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}
