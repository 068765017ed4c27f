import type { ManagedRecords, TopologyKind } from '../database/index.js';
import { ConstraintError } from '../database/index.js';
import { errorCatalog, SwitchyardError } from '../errors.js';
import type { Keyring } from '../live/index.js';
import {
  type Asked,
  auditAttempt,
  createKey,
  createTeam,
  deleteTeam,
  FieldsError,
  patchKey,
  patchTeam,
  revokeKey,
  rotateKey,
  TOPOLOGY_COLLECTIONS,
  type WriteContext,
  type Written,
  writeTargetOf,
} from '../managed/index.js';
import { readBody } from '../request/index.js';
import { serveCacheDrop } from './admin-cache.js';
import type { V1Context, V1Request } from './admin-caller.js';
import { ifMatch, jsonBody, MAX_BODY_BYTES, reloadHeaders, send, sendObject } from './admin-http.js';
import { getKey, listKeys } from './admin-keys.js';
import { serveProviderProbe } from './admin-probe.js';
import { getTeam, listTeams } from './admin-teams.js';
import { getTopology, listTopology, writeTopology } from './admin-topology.js';
import { serveUsage } from './admin-usage.js';
import { exportText } from './config-export.js';

// The managed teams and keys, under /admin/v1/: list, read, create, change, delete (a team)
// and revoke or rotate (a key), mapped from HTTP to managed/, which authorizes, validates,
// commits and audits each write. Bodies use the config file's field names and are judged by
// the config file's schemas, the very ones each row is judged by again when the keyring is
// built. A committed write is then applied here by a keyring swap (trigger `database`) before
// the answer, so the new key works on this replica when the client reads it; no provider or
// route is rebuilt. Teams and keys of the config file are listed too, and read-only (409
// managed_by_config). Every object has an ETag; a write with a stale If-Match is 412 and
// changes nothing.

/** Write attempts whose `applied` record is written: a later failure (reading the object back) is not another attempt. */
const auditedWrites = new WeakSet<V1Request>();

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
    if (err instanceof SwitchyardError && !auditedWrites.has(a)) auditAttempt(ctx.svc.audit, a.caller, targetOf(method, rest), err);
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
  // Who the caller is, as the gateway judged its token: what a page or a script shows before it tries anything.
  if (collection === 'me' && parts.length === 1) {
    if (method !== 'GET') throw notAllowed('GET');
    return send(a.res, 200, { id: a.caller.id, role: a.caller.role });
  }
  // A draft provider probed: POST only, so a provider named `test` is still read, changed and deleted.
  if (collection === 'providers' && id === 'test' && parts.length === 2 && method === 'POST') return serveProviderProbe(ctx, a, method);
  // The usage ledger: its own file, its own parameters.
  if (collection === 'usage') {
    const settings = ctx.database.settings;
    const usage = settings === null ? null : { maxRangeDays: settings.usage_max_range_days };
    return serveUsage(ctx.database.database, usage, a, method, parts.slice(1));
  }
  // The response cache: entries dropped fleet-wide.
  if (collection === 'cache') return serveCacheDrop(ctx.svc.cache, a, method, parts.slice(1));
  // The effective config as YAML, what `switchyard config export` prints.
  if (collection === 'config' && id === 'export' && parts.length === 2) {
    if (method !== 'GET') throw notAllowed('GET');
    return serveExport(ctx, a);
  }
  // Providers, routes, tool routes and prices.
  const kind = collection === undefined ? undefined : TOPOLOGY_COLLECTIONS[collection];
  if (kind !== undefined && Object.hasOwn(TOPOLOGY_COLLECTIONS, collection as string))
    return topology(ctx, a, method, rest, kind, id, action);
  if (parts.length > 3 || (collection !== 'teams' && collection !== 'keys')) {
    throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
  }
  const records = ctx.database.records;
  if (records === null) throw new SwitchyardError('not_found', 'managed teams and keys need a database: set database.url in the config');
  const keyring = ctx.svc.keyring.current();
  const write = (run: (w: WriteContext, asked: Asked) => Promise<Written>): Promise<void> =>
    run(writeContext(ctx, a, records, keyring), askedOf(a)).then((w) => answer(a, w));
  if (collection === 'teams') {
    if (action !== undefined) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
    if (id === undefined) {
      if (method === 'GET') return listTeams(a, records, keyring);
      if (method === 'POST') return write(createTeam);
      throw notAllowed('GET, POST');
    }
    if (method === 'GET') return getTeam(a, records, keyring, id);
    if (method === 'PATCH') return write((w, asked) => patchTeam(w, asked, id));
    if (method === 'DELETE') return write((w, asked) => deleteTeam(w, asked, id));
    throw notAllowed('GET, PATCH, DELETE');
  }
  if (id === undefined) {
    if (action !== undefined) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
    if (method === 'GET') return listKeys(ctx.svc, a, records, keyring);
    if (method === 'POST') return write(createKey);
    throw notAllowed('GET, POST');
  }
  if (action === undefined) {
    if (method === 'GET') return getKey(ctx.svc, a, records, keyring, id);
    if (method === 'PATCH') return write((w, asked) => patchKey(w, asked, id));
    throw notAllowed('GET, PATCH');
  }
  if (action !== 'revoke' && action !== 'rotate') throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
  if (method !== 'POST') throw notAllowed('POST');
  return write((w, asked) => (action === 'revoke' ? revokeKey : rotateKey)(w, asked, id));
}

async function serveExport(ctx: V1Context, a: V1Request): Promise<void> {
  const exported = await exportText(ctx.configPath, ctx.env, ctx.database);
  if (!exported.ok) throw new SwitchyardError('invalid_request', `the config cannot be exported: ${exported.errors.join('; ')}`);
  const headers: Record<string, string> = { 'content-type': 'application/yaml; charset=utf-8', 'cache-control': 'no-store' };
  // Warnings (a database object the file shadows) ride in a header, so the body is exactly what the CLI prints.
  if (exported.warnings.length > 0) headers['x-switchyard-warnings'] = String(exported.warnings.length);
  a.res.writeHead(200, headers);
  a.res.end(exported.text);
}

async function topology(
  ctx: V1Context,
  a: V1Request,
  method: string,
  rest: string,
  kind: TopologyKind,
  id: string | undefined,
  action: string | undefined,
): Promise<void> {
  if (action !== undefined) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/${rest}`);
  const records = ctx.database.records;
  if (records === null)
    throw new SwitchyardError(
      'not_found',
      'providers, routes and prices written at run time need a database: set database.url in the config',
    );
  const gen = ctx.svc.holder.current();
  const write = (): Promise<void> =>
    writeTopology(ctx, writeContext(ctx, a, records, ctx.svc.keyring.current()), askedOf(a), method, kind, id).then((w) => answer(a, w));
  if (id === undefined) {
    if (method === 'GET') return listTopology(a, records, gen, kind);
    if (method === 'POST') return write();
    throw notAllowed('GET, POST');
  }
  if (method === 'GET') return getTopology(ctx, a, records, gen, kind, id);
  if (method === 'PATCH' || method === 'DELETE') return write();
  throw notAllowed('GET, PATCH, DELETE');
}

function writeContext(ctx: V1Context, a: V1Request, records: ManagedRecords, keyring: Keyring): WriteContext {
  return {
    caller: a.caller,
    records,
    keyring,
    audit: ctx.svc.audit,
    apply: ctx.reloadForDatabase,
    onAudited: () => auditedWrites.add(a),
  };
}

function askedOf(a: V1Request): Asked {
  return {
    body: (emptyIsObject) => jsonBody(a.req, emptyIsObject),
    expected: () => ifMatch(a.req),
    drain: async () => {
      await readBody(a.req, MAX_BODY_BYTES);
    },
  };
}

/** A write's answer, with the headers of the swap that applied it. */
function answer(a: V1Request, w: Written): void {
  if (w.view === null || w.etag === null) {
    a.res.writeHead(w.status, reloadHeaders(w.applied));
    a.res.end();
    return;
  }
  sendObject(a.res, w.status, w.view, w.etag, w.applied);
}

/** The write a request attempts, for its audit record; null for a read. */
function targetOf(method: string, rest: string): ReturnType<typeof writeTargetOf> {
  let parts: string[];
  try {
    parts = rest.split('/').map((p) => decodeURIComponent(p));
  } catch {
    parts = rest.split('/');
  }
  return writeTargetOf(method, parts);
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
