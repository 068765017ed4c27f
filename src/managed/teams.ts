import { checkTeam } from '../config/index.js';
import type { ManagedTeam, WriteResult } from '../database/index.js';
import { SwitchyardError } from '../errors.js';
import type { Keyring } from '../live/index.js';
import { mayWrite } from './caller.js';
import { applied, judge, type LostCommitCheck, managedByConfig, type WriteContext, writeSettled } from './commit.js';
import { fieldsError, idOf, merged, patchChange, splitFields } from './fields.js';
import { type Asked, tagOf, type Written } from './written.js';

// The teams' writes: create, change, delete. Only an admin token changes teams. A team of the
// config file is read-only here (409 managed_by_config); a team still named by a key, the
// file's or the database's, is not deleted.

const TEAM_FIELDS = ['rate_limit', 'quota', 'budget', 'allowed_models', 'allowed_tools', 'allowed_agents', 'residency'] as const;

export function teamView(t: ManagedTeam): Record<string, unknown> {
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

export function configTeamView(keyring: Keyring, id: string): Record<string, unknown> {
  return { id, ...(keyring.fileTeams[id] ?? {}), metadata: {}, managed_by: 'config' };
}

export async function createTeam(ctx: WriteContext, asked: Asked): Promise<Written> {
  mayWrite(ctx.caller, null);
  const body = await asked.body();
  const id = idOf(body, true) as string;
  const { spec, metadata } = splitFields(body, TEAM_FIELDS, ['id']);
  const checked = checkTeam(spec);
  if (!checked.ok) throw fieldsError(checked.issues);
  if (ctx.keyring.fileTeams[id] !== undefined) throw managedByConfig('team', id);
  const settle: LostCommitCheck<null> = {
    target: { action: 'create', object: 'team', objectId: id },
    change: { ...spec, metadata: metadata ?? {} },
    read: () => ctx.records.team(id),
    appliedValue: null,
  };
  const { version } = await writeSettled(ctx.records, settle, async (w) => {
    if ((await w.team(id)) !== undefined) throw new SwitchyardError('conflict', `team "${id}" already exists`);
    await w.insertTeam({ id, spec, metadata: metadata ?? {} });
    return { commit: true, value: null };
  });
  const reload = await applied(ctx, settle, version);
  const team = (await ctx.records.team(id)) as ManagedTeam;
  return { status: 201, view: teamView(team), etag: tagOf(team.version), applied: reload };
}

export async function patchTeam(ctx: WriteContext, asked: Asked, id: string): Promise<Written> {
  mayWrite(ctx.caller, null);
  if (ctx.keyring.fileTeams[id] !== undefined) throw managedByConfig('team', id);
  const expected = asked.expected();
  const body = await asked.body();
  if (body.id !== undefined && body.id !== id) throw fieldsError([{ path: 'id', message: 'cannot be changed' }]);
  const patch = splitFields(body, TEAM_FIELDS, ['id']);
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'update', object: 'team', objectId: id },
    change: patchChange(patch),
    read: () => ctx.records.team(id),
    appliedValue: 'ok',
  };
  const { value: outcome, version } = await writeSettled(ctx.records, settle, async (w) => {
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
  const reload = await applied(ctx, settle, version);
  const team = (await ctx.records.team(id)) as ManagedTeam;
  return { status: 200, view: teamView(team), etag: tagOf(team.version), applied: reload };
}

export async function deleteTeam(ctx: WriteContext, asked: Asked, id: string): Promise<Written> {
  mayWrite(ctx.caller, null);
  if (ctx.keyring.fileTeams[id] !== undefined) throw managedByConfig('team', id);
  const expected = asked.expected();
  await asked.drain();
  // A key of the config file may name a managed team too: it keeps the team as much as a managed key does.
  const configKeys = ctx.keyring.fileKeys.filter((k) => k.team === id).length;
  const settle: LostCommitCheck<WriteResult> = {
    target: { action: 'delete', object: 'team', objectId: id },
    change: null,
    read: () => ctx.records.team(id),
    appliedValue: 'ok',
  };
  const { value: outcome, version } = await writeSettled(ctx.records, settle, async (w) => {
    const keys = (await w.keyCount(id)) + configKeys;
    if (keys > 0 && (await w.team(id)) !== undefined)
      throw new SwitchyardError('conflict', `team "${id}" still has ${keys} key${keys === 1 ? '' : 's'}: revoke or move them first`);
    const result = await w.deleteTeam(id, expected);
    return { commit: result === 'ok', value: result };
  });
  judge(outcome, 'team', id);
  const reload = await applied(ctx, settle, version);
  return { status: 204, view: null, etag: null, applied: reload };
}
