import type { ManagedRecords } from '../database/index.js';
import { SwitchyardError } from '../errors.js';
import type { Keyring } from '../live/index.js';
import { configTeamView, mayRead, teamOfRole, teamView } from '../managed/index.js';
import type { V1Request } from './admin-caller.js';
import { configTag, pageOf, sendObject, sendPage, tagOf } from './admin-http.js';

// The teams under /admin/v1/teams, read: a list and one team, the config file's beside the
// database's. Their writes are managed/'s (admin-v1.ts maps them).

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
