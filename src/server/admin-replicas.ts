import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchyardError } from '../errors.js';
import { send } from './admin-http.js';
import type { ReplicaHeartbeat, ReplicasView } from './heartbeat.js';

// `GET /admin/v1/replicas`: every replica's last heartbeat (its generation, topology digest,
// build time and last refused reload), each marked `behind` when it lags the newest digest
// or has gone silent, so an operator sees at once which replica has not applied a write.
// An admin or read-only token reads it; a team's token does not (the fleet is no team's).
// Without a database or Redis it lists this replica alone.

interface ReplicasCall {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly caller: { readonly id: string; readonly role: string };
}

export async function serveReplicas(
  heartbeat: ReplicaHeartbeat,
  call: ReplicasCall,
  method: string,
  rest: readonly string[],
): Promise<void> {
  if (rest.length > 0) throw new SwitchyardError('not_found', `no such admin endpoint: /admin/v1/replicas/${rest.join('/')}`);
  if (method !== 'GET') throw new SwitchyardError('method_not_allowed', 'this admin endpoint takes GET', null, { allow: 'GET' });
  const role = call.caller.role;
  if (role !== 'admin' && role !== 'read_only')
    throw new SwitchyardError('forbidden', `admin token "${call.caller.id}" (role ${role}) may not read the replicas`);
  let view: ReplicasView;
  try {
    view = await heartbeat.view();
  } catch (err) {
    throw new SwitchyardError(
      heartbeat.store === 'redis' ? 'store_unavailable' : 'database_unavailable',
      `the replicas' records could not be read (${(err as Error).message}); this replica alone: GET /admin/status`,
    );
  }
  send(call.res, 200, view);
}

/** The `replicas` section of /admin/status and the status page: every replica, or this one alone with why when the records cannot be read. */
export async function replicasStatus(heartbeat: ReplicaHeartbeat): Promise<ReplicasView & { readonly error: string | null }> {
  try {
    return { ...(await heartbeat.view()), error: null };
  } catch (err) {
    return { ...heartbeat.localView(), error: `the replicas' records could not be read (${(err as Error).message})` };
  }
}
