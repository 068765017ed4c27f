import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CacheStore } from '../cache/index.js';
import { SwitchyardError } from '../errors.js';
import { send } from './admin-http.js';

// `DELETE /admin/v1/cache?route=&team=`: drops response-cache entries, in the store every
// replica shares (Redis), or this replica's own (memory). An admin token drops any route's
// and any team's (both absent: everything); a `team:<id>` token drops its own team's only,
// which is also what it means without `team=`; a read-only token drops nothing. Answers
// `{"deleted": N}`. A store that cannot be reached is a 503: nothing is known to be dropped.

interface CacheCall {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly caller: { readonly id: string; readonly role: string };
}

const PARAMS = new Set(['route', 'team']);

export async function serveCacheDrop(store: CacheStore, call: CacheCall, method: string, rest: readonly string[]): Promise<void> {
  if (rest.length > 0) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/cache/${rest.join('/')}`);
  if (method !== 'DELETE') throw new SwitchyardError('method_not_allowed', 'this admin endpoint takes DELETE', null, { allow: 'DELETE' });
  const query = new URL(call.req.url ?? '/', 'http://admin').searchParams;
  for (const name of query.keys())
    if (!PARAMS.has(name)) throw new SwitchyardError('invalid_request', `unknown parameter "${name}" (route, team)`, name);
  const route = single(query, 'route');
  let team = single(query, 'team');
  const role = call.caller.role;
  if (role.startsWith('team:')) {
    const own = role.slice('team:'.length);
    if (team !== undefined && team !== own)
      throw new SwitchyardError('forbidden', `admin token "${call.caller.id}" may drop team "${own}"'s entries only`);
    team = own;
  } else if (role !== 'admin') {
    throw new SwitchyardError('forbidden', `admin token "${call.caller.id}" (role ${role}) may not drop cache entries`);
  }
  let deleted: number;
  try {
    deleted = await store.drop({ route, team });
  } catch (err) {
    throw new SwitchyardError(
      'store_unavailable',
      `the response cache's store did not answer (${(err as Error).message}); nothing is known to be dropped`,
    );
  }
  send(call.res, 200, { deleted });
}

function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length === 0) return undefined;
  if (values.length > 1 || values[0] === '')
    throw new SwitchyardError('invalid_request', `parameter "${name}" must be given once, not empty`, name);
  return values[0];
}
