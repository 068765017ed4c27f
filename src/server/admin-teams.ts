import { checkTeam } from '../config/index.js';
import type { ManagedRecords, ManagedTeam, WriteResult } from '../database/index.js';
import { SwitchyardError } from '../errors.js';
import type { Keyring } from '../live/index.js';
import { readBody } from '../request/index.js';
import { mayRead, mayWrite, teamOfRole, type V1Context, type V1Request } from './admin-caller.js';
import { fieldsError, idOf, merged, patchChange, splitFields } from './admin-fields.js';
import { configTag, ifMatch, jsonBody, MAX_BODY_BYTES, pageOf, reloadHeaders, sendObject, sendPage, tagOf } from './admin-http.js';
import { applied, judge, type LostCommitCheck, managedByConfig, writeSettled } from './admin-write.js';

// The teams under /admin/v1/teams: list, read, create, change, delete. A team of the config
// file is listed and read like a managed one, and is read-only here (409 managed_by_config).
// Only an admin token changes teams; a team token reads its own.

const TEAM_FIELDS = ['rate_limit', 'quota', 'budget', 'allowed_models', 'allowed_tools'] as const;

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

function configTeamView(keyring: Keyring, id: string): Record<string, unknown> {
  return { id, ...(keyring.fileTeams[id] ?? {}), metadata: {}, managed_by: 'config' };
}

export async function listTeams(a: V1Request, records: ManagedRecords, keyring: Keyring): Promise<void> {
  const { limit, after } = pageOf(a.req);
  const own = teamOfRole(a.caller);
  const fromConfig = Object.keys(keyring.fileTeams)
    .filter((id) => (after === undefined || id > after) && (own === null || id === own))
    .map((id) => ({ id, view: configTeamView(keyring, id) }));
  const fromDatabase = (await records.listTeams({ limit: limit + 1, ...(after === undefined ? {} : { after }) }))
    .filter((t) => own === null || t.id === own)
    .map((t) => ({ id: t.id, view: teamView(t) }));
  sendPage(a.res, [...fromConfig, ...fromDatabase], limit);
}

export async function getTeam(a: V1Request, records: ManagedRecords, keyring: Keyring, id: string): Promise<void> {
  mayRead(a.caller, id);
  if (keyring.fileTeams[id] !== undefined) return sendObject(a.res, 200, configTeamView(keyring, id), configTag(keyring));
  const team = await records.team(id);
  if (team === undefined) throw new SwitchyardError('not_found', `no team "${id}"`);
  sendObject(a.res, 200, teamView(team), tagOf(team.version));
}

export async function createTeam(ctx: V1Context, a: V1Request, records: ManagedRecords, keyring: Keyring): Promise<void> {
  mayWrite(a.caller, null);
  const body = await jsonBody(a.req);
  const id = idOf(body, true) as string;
  const { spec, metadata } = splitFields(body, TEAM_FIELDS, ['id']);
  const checked = checkTeam(spec);
  if (!checked.ok) throw fieldsError(checked.issues);
  if (keyring.fileTeams[id] !== undefined) throw managedByConfig('team', id);
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
  const reload = await applied(ctx, a, settle, version);
  const team = (await records.team(id)) as ManagedTeam;
  sendObject(a.res, 201, teamView(team), tagOf(team.version), reload);
}

export async function patchTeam(ctx: V1Context, a: V1Request, records: ManagedRecords, keyring: Keyring, id: string): Promise<void> {
  mayWrite(a.caller, null);
  if (keyring.fileTeams[id] !== undefined) throw managedByConfig('team', id);
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
  const reload = await applied(ctx, a, settle, version);
  const team = (await records.team(id)) as ManagedTeam;
  sendObject(a.res, 200, teamView(team), tagOf(team.version), reload);
}

export async function deleteTeam(ctx: V1Context, a: V1Request, records: ManagedRecords, keyring: Keyring, id: string): Promise<void> {
  mayWrite(a.caller, null);
  if (keyring.fileTeams[id] !== undefined) throw managedByConfig('team', id);
  const expected = ifMatch(a.req);
  await readBody(a.req, MAX_BODY_BYTES);
  // A key of the config file may name a managed team too: it keeps the team as much as a managed key does.
  const configKeys = keyring.fileKeys.filter((k) => k.team === id).length;
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
  const reload = await applied(ctx, a, settle, version);
  a.res.writeHead(204, reloadHeaders(reload));
  a.res.end();
}
