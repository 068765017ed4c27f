import { ConstraintError } from '../database/index.js';
import { errorCatalog, SwitchyardError } from '../errors.js';
import type { V1Context, V1Request } from './admin-caller.js';
import { FieldsError } from './admin-fields.js';
import { send } from './admin-http.js';
import { createKey, getKey, listKeys, patchKey, revokeKey, rotateKey } from './admin-keys.js';
import { createTeam, deleteTeam, getTeam, listTeams, patchTeam } from './admin-teams.js';
import { serveUsage } from './admin-usage.js';
import { auditAttempt, auditedWrites } from './admin-write.js';

// The managed teams and keys, under /admin/v1/: list, read, create, change, delete (a team)
// and revoke or rotate (a key). Bodies use the config file's field names and are judged by
// the config file's schemas; a write is committed only when the generation it makes would
// be valid, and is then applied by a reload with trigger `database` before the answer, so
// the new key works on this replica when the client reads it. Teams and keys of the config
// file are listed too, and read-only (409 managed_by_config). Every object has an ETag; a
// write with a stale If-Match is 412 and changes nothing.

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
  const keyring = ctx.svc.keyring.current();
  if (collection === 'teams') {
    if (action !== undefined) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
    if (id === undefined) {
      if (method === 'GET') return listTeams(a, records, keyring);
      if (method === 'POST') return createTeam(ctx, a, records, keyring);
      throw notAllowed('GET, POST');
    }
    if (method === 'GET') return getTeam(a, records, keyring, id);
    if (method === 'PATCH') return patchTeam(ctx, a, records, keyring, id);
    if (method === 'DELETE') return deleteTeam(ctx, a, records, keyring, id);
    throw notAllowed('GET, PATCH, DELETE');
  }
  if (id === undefined) {
    if (action !== undefined) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
    if (method === 'GET') return listKeys(ctx.svc, a, records, keyring);
    if (method === 'POST') return createKey(ctx, a, records, keyring);
    throw notAllowed('GET, POST');
  }
  if (action === undefined) {
    if (method === 'GET') return getKey(ctx.svc, a, records, keyring, id);
    if (method === 'PATCH') return patchKey(ctx, a, records, keyring, id);
    throw notAllowed('GET, PATCH');
  }
  if (action !== 'revoke' && action !== 'rotate') throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
  if (method !== 'POST') throw notAllowed('POST');
  return action === 'revoke' ? revokeKey(ctx, a, records, keyring, id) : rotateKey(ctx, a, records, keyring, id);
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
