import { SwitchyardError } from '../errors.js';

// Who makes a write through the admin API (by the token it presented), and what that
// caller's role lets it read and write. An `admin` token may do anything, a `read_only` one
// read anything, and a `team:<id>` one read and manage its own team's keys only: to it,
// another team's keys do not exist.

/** Who is calling the admin API, by the token it presented. */
export interface AdminCaller {
  /** The token's id (`admin` for server.admin_token; `anonymous` when the listener needs none). */
  readonly id: string;
  /** `admin`, `read_only` or `team:<id>`. */
  readonly role: string;
}

export function teamOfRole(caller: AdminCaller): string | null {
  return caller.role.startsWith('team:') ? caller.role.slice('team:'.length) : null;
}

/** An admin token, or a team token for its own team (`team` null: a write only an admin may make). */
export function mayWrite(caller: AdminCaller, team: string | null): void {
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

export function mayRead(caller: AdminCaller, team: string): void {
  const own = teamOfRole(caller);
  if (own !== null && own !== team) throw new SwitchyardError('forbidden', `admin token "${caller.id}" may read team "${own}" only`);
}

/**
 * To a team token, another team's key does not exist: the same 404 as a key that does not,
 * so that a team cannot learn which ids the others use.
 */
export function seeKey(caller: AdminCaller, id: string, team: string): void {
  const own = teamOfRole(caller);
  if (own !== null && own !== team) throw noKey(id);
}

export const noKey = (id: string): SwitchyardError => new SwitchyardError('not_found', `no key "${id}"`);
